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
setTimeout(() => { console.error("no event"); process.exit(1); }, 5000).unref();
