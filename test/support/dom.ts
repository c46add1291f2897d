// The few shapes of the DOM that the page tests use inside the browser. The project compiles
// without TypeScript's DOM library (nothing under src/ may reach for `window`), so a function
// Playwright runs in the page takes its globals as `globalThis as unknown as Dom`.

export interface DomRect {
  left: number;
  top: number;
  right: number;
  bottom: number;
  width: number;
  height: number;
}

export interface DomElement {
  id: string;
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  scrollTop: number;
  readonly clientHeight: number;
  readonly scrollHeight: number;
  readonly scrollWidth: number;
  readonly children: ArrayLike<DomElement> & Iterable<DomElement>;
  readonly lastElementChild: DomElement | null;
  getBoundingClientRect(): DomRect;
  contains(other: DomElement | null): boolean;
  matches(selector: string): boolean;
  getAttribute(name: string): string | null;
  querySelector(selector: string): DomElement | null;
}

export interface DomImage extends DomElement {
  src: string;
  readonly complete: boolean;
  readonly naturalWidth: number;
  decode(): Promise<void>;
}

export interface DomLink extends DomElement {
  readonly href: string;
}

export interface DomRange {
  selectNodeContents(node: DomElement): void;
}

export interface Dom {
  document: {
    readonly activeElement: DomElement | null;
    readonly documentElement: DomElement;
    elementFromPoint(x: number, y: number): DomElement | null;
    querySelector(selector: string): DomElement | null;
    createRange(): DomRange;
  };
  getSelection(): { toString(): string; removeAllRanges(): void; addRange(range: DomRange): void } | null;
  readonly innerWidth: number;
  readonly innerHeight: number;
  readonly sessionStorage: { getItem(key: string): string | null };
  Image: new () => DomImage;
}
