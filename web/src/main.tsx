import { render } from "preact";
import { App } from "./ui/App";
import "./ui/style.css";
import "./ui/fonts.css";

const root = document.getElementById("app");
if (root) render(<App />, root);

// Installable on a phone (issue 39): the service worker keeps the app shell (src/sw.ts), never
// the game. Registered once the page has loaded, so it costs the first load nothing.
if ("serviceWorker" in navigator && window.isSecureContext) {
  addEventListener("load", () => void navigator.serviceWorker.register("/sw.js").catch(() => undefined));
}
