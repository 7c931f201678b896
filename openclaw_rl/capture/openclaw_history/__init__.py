"""Import OpenClaw's own session history (``openclaw-rl import-openclaw``).

A person who installs OpenClaw-RL already has weeks of conversations with their OpenClaw agent.
OpenClaw keeps them itself (read from ``openclaw@2026.9.6``, the version ``make test`` installs):

* the per-agent SQLite store ``<state>/agents/<agentId>/agent/openclaw-agent.sqlite``
  (``schema_meta.schema_version`` 23): table ``transcript_events`` holds each session's transcript
  as JSON events (``event_json``, or zstd-compressed ``event_zstd``), ``session_windows`` names the
  session key, ``trajectory_runtime_events`` holds each run's ``session.started`` event with the
  run's trigger (OpenClaw's turn type: ``user``, ``manual``, ``heartbeat``, ``cron``, ``memory``,
  ``overflow``);
* legacy per-agent JSONL transcripts ``<state>/agents/<agentId>/sessions/*.jsonl`` (one event a
  line, first a ``{"type": "session", "version": 4}`` header) that ``openclaw doctor`` migrates;
* trajectory bundles written by ``openclaw sessions export-trajectory`` (a folder with
  ``manifest.json``, ``traceSchema: openclaw-trajectory``, ``schemaVersion`` 1,
  ``session-branch.json`` and ``events.jsonl``).

The transcript is a tree (``id`` / ``parentId``, for rewinds); the active branch is read.

Modules: :mod:`.sources` reads the three formats into :class:`~.sources.HistorySession` records,
:mod:`.turns` turns one into the project's turn records (main/side turns, next states), and
:mod:`.importer` writes them into a trajectory store (idempotent) and is the command line.
"""
