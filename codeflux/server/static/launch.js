// The launch page: keep this tab's page key (the redemption response is the only place it is ever
// delivered) in sessionStorage, where only this tab's pages of this origin can read it, then open the
// app in place of the launch URL (its token is spent; it leaves the history).

import { PAGE_KEY_STORAGE } from "./rpc.js";

const meta = document.querySelector('meta[name="codeflux-page-key"]');
if (meta && meta.content) {
  sessionStorage.setItem(PAGE_KEY_STORAGE, meta.content);
  meta.remove();
}
location.replace("/");
