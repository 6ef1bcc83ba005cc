// The service worker (issue 39: installable on a phone). It keeps the app shell only: the
// page (network first, the kept copy when offline), its hashed assets (kept once fetched:
// their names change with their content), the manifest, the icons and the fonts. The game
// always comes from the server: gRPC-Web and every other request (POST, another origin, any
// path outside the shell) pass through untouched, never answered from the cache.
// Built to dist/sw.js (vite.config.ts), registered by main.tsx.

type ExtendableEvent = Event & { waitUntil(p: Promise<unknown>): void };
type FetchEvent = ExtendableEvent & { request: Request; respondWith(r: Promise<Response>): void };
type Scope = {
  addEventListener(type: "install" | "activate", on: (e: ExtendableEvent) => void): void;
  addEventListener(type: "fetch", on: (e: FetchEvent) => void): void;
  skipWaiting(): Promise<void>;
  clients: { claim(): Promise<void> };
  location: Location;
};

const scope = self as unknown as Scope;
const CACHE = "trix-shell-v1";
/** The shell's files outside assets/ (public/): kept at install. */
const FILES = ["/", "/manifest.webmanifest", "/icon.svg", "/icon-192.png", "/icon-512.png"];

/** A request the shell answers: GET on this origin, the page or one of its files. */
function isShell(method: string, url: URL, origin: string): "page" | "file" | null {
  if (method !== "GET" || url.origin !== origin) return null;
  if (url.pathname.startsWith("/assets/") || FILES.includes(url.pathname)) return url.pathname === "/" ? "page" : "file";
  // An app route (no extension, not the API's /trix.v1.… paths): the page.
  const last = url.pathname.split("/").pop() ?? "";
  return url.pathname.startsWith("/trix.") || last.includes(".") ? null : "page";
}

/** The page and what it names (its script, stylesheet, preloads), fetched at install. */
async function keepShell(): Promise<void> {
  const cache = await caches.open(CACHE);
  const page = await fetch("/", { cache: "no-cache" });
  if (!page.ok) return;
  const html = await page.clone().text();
  const named = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1] ?? "");
  await cache.put("/", page);
  await cache.addAll([...FILES.slice(1), ...named.filter(Boolean)]);
}

scope.addEventListener("install", (e) => {
  e.waitUntil(keepShell().catch(() => undefined).then(() => scope.skipWaiting()));
});

scope.addEventListener("activate", (e) => {
  const old = caches.keys().then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))));
  e.waitUntil(old.then(() => scope.clients.claim()));
});

scope.addEventListener("fetch", (e) => {
  const url = new URL(e.request.url);
  const kind = isShell(e.request.method, url, scope.location.origin);
  if (kind === "page") e.respondWith(pageFirst(e.request));
  else if (kind === "file") e.respondWith(keptFirst(e.request));
});

/** The page from the network (a new version at once), the kept one when offline. */
async function pageFirst(request: Request): Promise<Response> {
  const cache = await caches.open(CACHE);
  try {
    const fresh = await fetch(request);
    if (fresh.ok) await cache.put("/", fresh.clone());
    return fresh;
  } catch (err) {
    const kept = await cache.match("/");
    if (kept) return kept;
    throw err;
  }
}

/** A shell file from the cache, else from the network (then kept). */
async function keptFirst(request: Request): Promise<Response> {
  const cache = await caches.open(CACHE);
  const kept = await cache.match(request);
  if (kept) return kept;
  const fresh = await fetch(request);
  if (fresh.ok) await cache.put(request, fresh.clone());
  return fresh;
}
