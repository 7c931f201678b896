"""gui-rl's environment: MiniWoB++ pages in headless Chromium driven by Playwright (issue 14).

Modules: :mod:`.actions` (the pyautogui action space), :mod:`.browser` (one Chromium per slot),
:mod:`.dom_text` (the a11y-tree text observation), :mod:`.miniwob_tasks` (pages, split, reward JS),
:mod:`.session` (one episode), :mod:`.slots` (warm browsers), :mod:`.pool_server` (the HTTP pool),
:mod:`.client` (its client), :mod:`.env` (the text agent's environment), :mod:`.data` (task lists).
"""
