/** Escaping text for HTML, XML and SVG (element text and quoted attributes). */

/** `s` with `& < > " '` escaped. */
export function esc(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;").replaceAll("'", "&#39;");
}

/**
 * A relative file path as an `href` value: each segment percent-encoded
 * (a `#`, `?` or space in a file name stays part of it, and a name like
 * `javascript:x` cannot become a scheme), then escaped for the attribute.
 */
export function fileHref(path: string): string {
  return esc(
    path.split("/").map((seg) => seg === ".." || seg === "." ? seg : encodeURIComponent(seg)).join(
      "/",
    ),
  );
}
