// OpenClaw-RL dashboard: polls the admin API and renders it; every action is one API call.
// All text from the store is set with textContent (never parsed as HTML).
"use strict";

const KEY = new URLSearchParams(location.search).get("key") || "";
const POLL_MS = 3000;
let editing = false; // a lesson or correction being typed: do not re-render under the cursor

async function api(method, path, body) {
  const headers = {"Content-Type": "application/json"};
  if (KEY) headers["Authorization"] = "Bearer " + KEY;
  const r = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((data.error && data.error.message) || r.status);
  return data;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : String(c ?? ""));
  return node;
}

function fmt(x, digits = 3) {
  return typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(digits)) : (x ?? "");
}

function status(text) { document.getElementById("status").textContent = text; }

async function act(fn, done) {
  try { await fn(); status(done + " " + new Date().toLocaleTimeString()); await refresh(); }
  catch (e) { status("error: " + e.message); alert(e.message); }
}

function voteCell(v) {
  if (v === 1) return el("span", {class: "vote-pos"}, "+1");
  if (v === -1) return el("span", {class: "vote-neg"}, "-1");
  return el("span", {}, v === null || v === undefined ? "–" : "0");
}

function turnRow(t) {
  const tr = el("tr", {"data-turn": t.turn_id, class: (t.type === "side" ? "side " : "") + (t.rating ? "rated" : "")});
  const judge = t.judge || {};
  const rate = el("td", {class: "rate"});
  if (t.type === "main") {
    const correction = el("input", {class: "correction", placeholder: "correction (optional)",
      onfocus: () => { editing = true; }, onblur: () => { editing = false; }});
    const send = (rating) => act(() => api("POST", "/v1/feedback",
      {turn_id: t.turn_id, rating, correction: correction.value || undefined}), "rated");
    rate.append(el("button", {class: "rate-up", title: "a good reply", onclick: () => send(1)}, "+1"),
                el("button", {class: "rate-down", title: "a bad reply", onclick: () => send(-1)}, "−1"), correction);
    if (t.rating) rate.append(el("button", {class: "rate-undo", onclick: () =>
      act(() => api("DELETE", "/v1/feedback/" + encodeURIComponent(t.turn_id)), "undone")}, "undo"));
  }
  tr.append(el("td", {}, t.index), el("td", {}, t.type + " / " + t.status), el("td", {}, t.user),
            el("td", {}, t.reply), el("td", {}, t.next_state ?? ""),
            el("td", {class: "judge-vote"}, voteCell(judge.vote)), el("td", {}, judge.hint_accepted ? judge.hint : ""),
            el("td", {class: "rating"}, voteCell(t.rating), t.correction ? " " + t.correction : ""),
            el("td", {}, t.trained_step ?? ""), rate);
  return tr;
}

function renderConversations(list, summary) {
  const s = summary || {};
  document.getElementById("feedback-summary").textContent = s.total === undefined ? "" :
    `ratings: ${s.total} (${s.positive} up, ${s.negative} down, ${s.corrections} corrections, ${s.applied} trained,` +
    ` ${s.after_training} after training) · judge agreement with your ratings: ` +
    (s.judge_agreement >= 0 ? (100 * s.judge_agreement).toFixed(0) + "%" : "no comparable rating yet") +
    ` (${s.judge_agree} agree, ${s.judge_disagree} disagree, ${s.judge_abstained} without a vote)`;
  const box = document.getElementById("conversation-list");
  box.replaceChildren(...list.map((c) => {
    const table = el("table", {}, el("thead", {}, el("tr", {}, ...["#", "type / status", "user", "reply",
      "next state", "judge", "hint", "your rating", "trained step", "rate"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...c.turns.map(turnRow)));
    const forget = el("button", {class: "forget", onclick: () => {
      if (confirm(`Forget conversation ${c.session_id}? Its turns, votes, hints, ratings and lessons are deleted ` +
                  "from the store and the disk.")) {
        act(async () => {
          const r = await api("POST", "/admin/forget", {session_id: c.session_id});
          status(`forgot ${r.turns} turns; versions trained on them: ${r.versions_trained_on.join(", ") || "none"}`);
        }, "forgot");
      }
    }}, "forget this conversation");
    return el("div", {class: "session", "data-session": c.session_id},
              el("h3", {}, "session " + c.session_id, el("span", {class: "hint"}, `${c.turns.length} turns`), forget),
              table);
  }));
}

function renderTraining(t) {
  document.getElementById("training-file").textContent = t.file ? "from " + t.file : "no training metrics yet";
  const rows = t.steps.slice().reverse().map((s) => {
    const sat = Object.entries(s).filter(([k]) => k.includes("satisfaction")).map(([, v]) => fmt(v)).join(" ");
    const gate = s["gate/passed"] === undefined ? "" : (s["gate/passed"] ? "pass" : "FAIL");
    return el("tr", {}, el("td", {}, s.step), el("td", {}, fmt(s["reward/mean"])),
              el("td", {}, fmt(s["train/loss"] ?? s.loss)), el("td", {}, fmt(s["train/approx_kl"] ?? s["train/kl_loss"], 5)),
              el("td", {}, sat), el("td", {}, fmt(s.weight_version)), el("td", {}, gate));
  });
  document.querySelector("#training-table tbody").replaceChildren(...rows);
}

function renderVersions(v) {
  const rows = v.data.map((x) => {
    const passed = x.gate && x.gate["gate/passed"];
    const gate = passed === undefined ? "–" : (passed ? "pass" : "FAIL");
    const cell = el("td", {});
    if (x.version !== v.serving) {
      cell.append(el("button", {class: "rollback", onclick: () => {
        if (confirm(`Serve weight version ${x.version} again?`))
          act(() => api("POST", "/admin/rollback", {version: x.version}), "rolled back");
      }}, "roll back to this"));
    } else cell.append("serving");
    return el("tr", {"data-version": x.version}, el("td", {}, x.version), el("td", {}, x.status), el("td", {}, gate),
              el("td", {}, x.turns_sampled ?? ""), el("td", {}, x.turns_trained ?? ""),
              el("td", {}, new Date(x.served_at * 1000).toLocaleString()), cell);
  });
  document.querySelector("#versions-table tbody").replaceChildren(...rows);
}

function renderLessons(l) {
  const rows = l.data.map((x) => {
    const text = el("input", {class: "lesson-text", value: x.text, size: 60,
      onfocus: () => { editing = true; }, onblur: () => { editing = false; }});
    return el("tr", {"data-lesson": x.id}, el("td", {}, x.id), el("td", {}, text),
              el("td", {}, x.turn_ids.join(", ")),
              el("td", {}, el("button", {class: "lesson-save", onclick: () =>
                  act(() => api("PATCH", "/admin/lessons/" + x.id, {text: text.value}), "saved")}, "save"),
                 el("button", {class: "lesson-delete", onclick: () =>
                  act(() => api("DELETE", "/admin/lessons/" + x.id), "deleted")}, "delete")));
  });
  document.querySelector("#lessons-table tbody").replaceChildren(...rows);
}

function renderStorage(s) {
  document.getElementById("storage-folder").textContent = `${s.folder}: ${s.total_bytes} bytes in all`;
  document.querySelector("#storage-files tbody").replaceChildren(
    ...s.files.map((f) => el("tr", {}, el("td", {}, f.path), el("td", {}, f.bytes))));
  document.querySelector("#storage-tables tbody").replaceChildren(
    ...Object.entries(s.tables).map(([k, n]) => el("tr", {}, el("td", {}, k), el("td", {}, n))));
}

async function refresh() {
  if (editing) return;
  try {
    const [conv, fb, train, vers, less, store] = await Promise.all([
      api("GET", "/admin/conversations"), api("GET", "/admin/feedback?limit=1"), api("GET", "/admin/training"),
      api("GET", "/admin/versions"), api("GET", "/admin/lessons"), api("GET", "/admin/storage")]);
    renderConversations(conv.data, fb.summary);
    renderTraining(train);
    renderVersions(vers);
    renderLessons(less);
    renderStorage(store);
    document.body.dataset.serving = vers.serving;
    document.body.dataset.loaded = "1";
    if (!document.getElementById("status").textContent.startsWith("error"))
      status(`serving version ${vers.serving} · updated ${new Date().toLocaleTimeString()}`);
  } catch (e) { status("error: " + e.message); }
}

function showTab() {
  const name = (location.hash || "#conversations").slice(1);
  for (const s of document.querySelectorAll(".tab")) s.classList.toggle("active", s.id === name);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.tab === name);
}

window.addEventListener("hashchange", showTab);
showTab();
refresh();
setInterval(refresh, POLL_MS);
