// fs.watch (inotify) on the working directory
const fs = require("fs");
const assert = require("assert");

const w = fs.watch(".", (ev, name) => {
  if (name === "watched.txt") {
    w.close();
    console.log("saw", ev, name);
    console.log("OK");
  }
});
setTimeout(() => fs.writeFileSync("watched.txt", "x"), 50);
// only a watch that never fires takes 60 s, however busy the machine
setTimeout(() => { console.error("no event"); process.exit(1); }, 60000).unref();
