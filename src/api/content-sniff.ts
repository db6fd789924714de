/**
 * The Content-Type Nomad gives file contents it serves (`/v1/client/fs/cat`,
 * `readat`): Go's http.DetectContentType over the first 512 bytes, with
 * every type a browser would render as a page (text/html, xhtml) turned into
 * "text/plain" (helper/noxssrw), so a file from a task cannot run script in
 * the UI's origin. The common signatures of Go's table; anything else is
 * text when it has no binary bytes, else application/octet-stream.
 */
export const SNIFF_LENGTH = 512;

const HTML_TAGS = [
  "<!DOCTYPE HTML",
  "<HTML",
  "<HEAD",
  "<SCRIPT",
  "<IFRAME",
  "<H1",
  "<DIV",
  "<FONT",
  "<TABLE",
  "<A",
  "<STYLE",
  "<TITLE",
  "<B",
  "<BODY",
  "<BR",
  "<P",
  "<!--",
];

const PREFIXES: ReadonlyArray<readonly [Buffer, string]> = [
  [Buffer.from("%PDF-"), "application/pdf"],
  [Buffer.from("%!PS-Adobe-"), "application/postscript"],
  [Buffer.from([0xfe, 0xff]), "text/plain; charset=utf-16be"],
  [Buffer.from([0xff, 0xfe]), "text/plain; charset=utf-16le"],
  [Buffer.from([0xef, 0xbb, 0xbf]), "text/plain; charset=utf-8"],
  [Buffer.from([0x00, 0x00, 0x01, 0x00]), "image/x-icon"],
  [Buffer.from([0x00, 0x00, 0x02, 0x00]), "image/x-icon"],
  [Buffer.from("BM"), "image/bmp"],
  [Buffer.from("GIF87a"), "image/gif"],
  [Buffer.from("GIF89a"), "image/gif"],
  [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), "image/png"],
  [Buffer.from([0xff, 0xd8, 0xff]), "image/jpeg"],
  [Buffer.from([0x1f, 0x8b, 0x08]), "application/x-gzip"],
  [Buffer.from("PK\x03\x04"), "application/zip"],
  [Buffer.from("Rar!\x1a\x07\x00"), "application/x-rar-compressed"],
  [Buffer.from("Rar!\x1a\x07\x01\x00"), "application/x-rar-compressed"],
  [Buffer.from([0x00, 0x61, 0x73, 0x6d]), "application/wasm"],
];

/** The Content-Type of a file starting with `head` (at most SNIFF_LENGTH bytes are looked at). */
export function sniffContentType(head: Buffer): string {
  const data = head.subarray(0, SNIFF_LENGTH);
  let start = 0;
  while (start < data.length && isWhitespace(data[start]!)) start++;
  const text = data.subarray(start);
  for (const tag of HTML_TAGS) {
    if (matchesHtml(text, tag)) return "text/plain";
  }
  if (text.subarray(0, 5).toString("latin1") === "<?xml") return "text/xml; charset=utf-8";
  for (const [prefix, type] of PREFIXES) {
    if (data.subarray(0, prefix.length).equals(prefix)) return type;
  }
  if (data.length >= 12 && data.subarray(0, 4).toString("latin1") === "RIFF") {
    if (data.subarray(8, 14).toString("latin1") === "WEBPVP") return "image/webp";
  }
  return data.some(isBinary) ? "application/octet-stream" : "text/plain; charset=utf-8";
}

/** Go's htmlSig: the tag in any case, then a space or '>'. */
function matchesHtml(text: Buffer, tag: string): boolean {
  if (text.length < tag.length + 1) return false;
  for (let i = 0; i < tag.length; i++) {
    let b = text[i]!;
    const t = tag.charCodeAt(i);
    if (t >= 0x41 && t <= 0x5a) b &= 0xdf;
    if (b !== t) return false;
  }
  const next = text[tag.length]!;
  return next === 0x20 || next === 0x3e;
}

const isWhitespace = (b: number) => b === 0x09 || b === 0x0a || b === 0x0c || b === 0x0d || b === 0x20;

/** Go's isTT binary test: control bytes other than tab, newlines, form feed, escape. */
const isBinary = (b: number) =>
  b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f);
