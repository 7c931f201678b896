"""The text observation (``GUI_OBSERVATION_TYPE=a11y_tree``): the page's visible elements with
their screen coordinates, for a text model.

A flattened accessibility tree in OSWorld's linearised style (one element per line, tab-separated
columns, a header line): ``tag``, ``name`` (id, or the ARIA label / input name), ``text`` (the
element's own text, or a control's label / placeholder), ``value`` (an input's value, ``checked``
/ ``unchecked`` for check boxes and radios), ``center`` (``x,y``: click here) and ``size``
(``w x h``), all in viewport pixels, i.e. the coordinates ``pyautogui.click(x, y)`` takes.

Listed: visible elements inside the viewport that are interactive (links, buttons, inputs,
selects, text areas, labels, elements with a click handler, a tabindex or an ARIA role) or that
carry their own text or are a leaf with an area (a coloured box, an SVG shape); MiniWoB's own
reward HUD (``#reward-display``) and click-visualisation canvas are skipped. At most
``max_elements`` lines, texts cut to 80 characters.
"""

from __future__ import annotations

__all__ = ["DOM_ELEMENTS_JS", "render_elements"]

HEADER = "tag\tname\ttext\tvalue\tcenter\tsize"

DOM_ELEMENTS_JS = r"""
(maxElements) => {
  const skip = new Set(['reward-display', 'click-canvas']);
  const interactive = new Set(['A','BUTTON','INPUT','SELECT','TEXTAREA','LABEL','OPTION','SUMMARY']);
  const W = window.innerWidth, H = window.innerHeight, out = [];
  const ownText = (el) => Array.from(el.childNodes).filter(n => n.nodeType === 3)
      .map(n => n.textContent).join(' ').replace(/\s+/g, ' ').trim();
  const walk = (el) => {
    if (out.length >= maxElements || skip.has(el.id)) return;
    const style = getComputedStyle(el);
    if (style.display === 'none') return;
    const r = el.getBoundingClientRect();
    const visible = style.visibility !== 'hidden' && r.width > 0 && r.height > 0 &&
                    r.right > 0 && r.bottom > 0 && r.left < W && r.top < H;
    const tag = el.tagName;
    const kids = el.children.length;
    let text = ownText(el);
    const isInteractive = interactive.has(tag) || el.onclick || el.hasAttribute('onclick') ||
        el.hasAttribute('tabindex') || el.hasAttribute('role') || el.isContentEditable;
    const isShape = el instanceof SVGGraphicsElement && kids === 0;
    if (visible && tag !== 'HTML' && tag !== 'BODY' && tag !== 'SCRIPT' && tag !== 'STYLE' &&
        (isInteractive || text || isShape || (kids === 0 && r.width * r.height >= 16))) {
      let value = '';
      if (tag === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) value = el.checked ? 'checked' : 'unchecked';
      else if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') value = el.value || '';
      if (!text && (tag === 'INPUT' || tag === 'TEXTAREA')) text = el.placeholder || '';
      if (!text && tag === 'SELECT' && el.selectedOptions.length) text = el.selectedOptions[0].text;
      const name = el.id || el.getAttribute('aria-label') || el.getAttribute('name') || '';
      let t = tag.toLowerCase();
      if (tag === 'INPUT') t += '_' + (el.type || 'text');
      if (isShape) { const fill = el.getAttribute('fill'); if (fill) text = text || ('fill=' + fill); }
      if (!text && !isInteractive && kids === 0 && style.backgroundColor && style.backgroundColor !== 'rgba(0, 0, 0, 0)')
        text = 'background ' + style.backgroundColor;
      out.push([t, name, text, String(value), Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2),
                Math.round(r.width), Math.round(r.height)]);
    }
    for (const c of el.children) walk(c);
  };
  if (document.body) walk(document.body);
  return out;
}
"""


def _cell(text: str, limit: int = 80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_elements(rows: list[list], max_elements: int = 200) -> str:
    """The text table of :data:`DOM_ELEMENTS_JS`'s rows (module docstring); ``"(no visible elements)"``
    after the header when there are none."""
    lines = [HEADER]
    for tag, name, text, value, cx, cy, w, h in rows[:max_elements]:
        lines.append(f"{tag}\t{_cell(name, 40)}\t{_cell(text)}\t{_cell(value, 40)}\t{cx},{cy}\t{w}x{h}")
    if len(lines) == 1:
        lines.append("(no visible elements)")
    return "\n".join(lines)
