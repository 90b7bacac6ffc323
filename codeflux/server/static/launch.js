// The launch page: keep this tab's page key (the redemption response is the only place it is ever
// delivered) in sessionStorage, where only this tab's pages of this origin can read it, then open the
// app in place of the launch URL (its token is spent; it leaves the history). A tab that was on a task's
// address when it needed a new link (this tab's own sessionStorage says which) goes back to that task; a
// link made for one task (`codeflux open --task`, named by the server in a meta tag) opens that task.

import { PAGE_KEY_STORAGE, RETURN_TO_STORAGE } from "./rpc.js";

const TASK_PAGE = /^\/tasks\/[A-Za-z0-9_-]{1,128}$/;

const meta = document.querySelector('meta[name="codeflux-page-key"]');
if (meta && meta.content) {
  sessionStorage.setItem(PAGE_KEY_STORAGE, meta.content);
  meta.remove();
}
let back = "";
try {
  back = sessionStorage.getItem(RETURN_TO_STORAGE) || "";
  sessionStorage.removeItem(RETURN_TO_STORAGE);
} catch {
  back = "";
}
const named = document.querySelector('meta[name="codeflux-task-page"]');
const target = [named ? named.content : "", back].find((path) => TASK_PAGE.test(path));
location.replace(target || "/");
