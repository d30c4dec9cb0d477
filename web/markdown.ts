/**
 * Message text as HTML: a small, safe subset of Markdown rendered from escaped text. Everything is
 * HTML-escaped first; only then are our own fixed tags added (code, pre, strong, em, ul/li, br,
 * and links to http(s) or mailto), so no tag or attribute from a message can reach the page. We
 * chose this over a Markdown library plus a sanitizer: the page needs little formatting, the
 * bundle stays small, and safety holds by construction rather than by a sanitizer's allow-list.
 */

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text safe to place in HTML content or a double-quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** The most characters rendered; longer text is cut with a marker (a dashboard row, not a reader). */
export const MAX_RENDERED_CHARS = 20_000;

/** Render message text (Markdown subset) to HTML that holds only the tags listed above. */
export function renderMarkdown(input: string): string {
  // NUL and U+E000 mark our placeholders below; a message's own are dropped.
  let text = input.replace(/[\0\uE000]/g, "");
  const cut = text.length > MAX_RENDERED_CHARS;
  if (cut) text = text.slice(0, MAX_RENDERED_CHARS);
  const out: string[] = [];
  const blocks = text.split(/^```[^\n]*$/m);
  blocks.forEach((block, i) => {
    // Odd pieces sit between fences: code, shown as is.
    if (i % 2 === 1) out.push(`<pre><code>${escapeHtml(block.replace(/^\n|\n$/g, ""))}</code></pre>`);
    else out.push(renderProse(block));
  });
  if (cut) out.push("<em>… (cut)</em>");
  return out.join("");
}

function renderProse(block: string): string {
  const out: string[] = [];
  let para: string[] = [];
  let list: string[] = [];
  const flushPara = () => {
    if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`);
    para = [];
  };
  const flushList = () => {
    if (list.length) out.push(`<ul>${list.map((l) => `<li>${inline(l)}</li>`).join("")}</ul>`);
    list = [];
  };
  for (const line of block.split("\n")) {
    const item = /^\s*[-*]\s+(.*)$/.exec(line);
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (item) {
      flushPara();
      list.push(item[1]!);
    } else if (heading) {
      flushPara();
      flushList();
      out.push(`<p><strong>${inline(heading[1]!)}</strong></p>`);
    } else if (line.trim() === "") {
      flushPara();
      flushList();
    } else {
      flushList();
      para.push(line);
    }
  }
  flushPara();
  flushList();
  return out.join("");
}

/** Inline code, bold, emphasis and links, on one line. */
function inline(raw: string): string {
  const codes: Array<{ html: string; text: string }> = [];
  let s = escapeHtml(raw).replace(/`([^`]+)`/g, (m: string, code: string) => {
    codes.push({ html: `<code>${code}</code>`, text: m });
    return `\0${codes.length - 1}\0`;
  });
  // A link's URL is set aside too, so no formatting lands inside its attribute. It was escaped
  // with the rest, so it cannot leave its double-quoted attribute.
  const urls: string[] = [];
  s = s.replace(/\[([^\]]+)\]\(((?:https?:\/\/|mailto:)[^\s)]+)\)/gi, (_m, label: string, url: string) => {
    urls.push(url.replace(/\0(\d+)\0/g, (_c, i: string) => codes[Number(i)]!.text));
    return `<a href="\uE000${urls.length - 1}\uE000" rel="noopener noreferrer" target="_blank">${label}</a>`;
  });
  s = s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
  s = s.replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, "$1<em>$2</em>");
  s = s.replace(/\0(\d+)\0/g, (_m, i: string) => codes[Number(i)]!.html);
  return s.replace(/\uE000(\d+)\uE000/g, (_m, i: string) => urls[Number(i)]!);
}
