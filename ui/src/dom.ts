/** Attributes and properties of an element made by `h`: strings become attributes, `on*` functions listeners. */
type Attrs = Readonly<Record<string, string | number | boolean | undefined | ((event: Event) => void)>>;
export type Child = Node | string | number | null | undefined | false;

/**
 * Builds an element: the page is small enough that a few calls of this read
 * better than a framework, and nothing is parsed from strings (no innerHTML,
 * so no markup injection from the data shown).
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: readonly (Child | readonly Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: readonly (Child | readonly Child[])[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else if (child !== null && child !== undefined && child !== false) {
      parent.appendChild(document.createTextNode(String(child)));
    }
  }
}

/** A link to a route of this page. */
export const link = (route: string, text: string, attrs: Attrs = {}) =>
  h("a", { href: route, ...attrs }, text);

/** Index and time as one reads them in a list: `#42` and a local time with seconds. */
export function formatTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { hour12: false });
}

/** A short ID as Nomad's CLI shows it, the full one in the title. */
export function shortId(id: string): string {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(id) ? id.slice(0, 8) : id;
}
