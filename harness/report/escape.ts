/** Escaping text for HTML, XML and SVG (element text and quoted attributes). */

/** `s` with `& < > " '` escaped. */
export function esc(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;").replaceAll("'", "&#39;");
}
