"use strict";
// The session page's script: it verifies the ledger embedded in the page
// (the rules of docs/ledger.md, as `truss ledger verify FILE` checks them),
// then draws the session from the verified bytes alone. Everything it
// draws is a text node or an element it makes itself: no text from the
// ledger is ever parsed as markup.
(() => {
  const enc = new TextEncoder();
  const dec = new TextDecoder("utf-8", { fatal: false });
  const subtle = globalThis.crypto && globalThis.crypto.subtle;

  // ---- small helpers ----
  const HEX = Array.from({ length: 256 }, (_, x) => x.toString(16).padStart(2, "0"));
  const hex = (b) => {
    let s = "";
    for (let i = 0; i < b.length; i++) s += HEX[b[i]];
    return s;
  };
  const unb64 = (s) => {
    if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) throw new Error("not base64");
    // Strictly: the last digit's unused bits are zero, so that each
    // bytes have one text.
    const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
    if (pad > 0 && "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".indexOf(s[s.length - pad - 1]) & (pad === 2 ? 15 : 3)) throw new Error("not base64");
    if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(s, { lastChunkHandling: "strict" });
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  };
  const b64 = (b) => btoa(String.fromCharCode(...b));
  const concat = (...parts) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) { out.set(p, o); o += p.length; }
    return out;
  };
  const sha256 = async (b) => new Uint8Array(await subtle.digest("SHA-256", b));
  // inflate is the raw DEFLATE stream z inflated, which must come to
  // exactly size bytes: no more than that is inflated.
  const inflate = async (z, size) => {
    const bad = "its deflated bytes inflate to more or fewer than its size of " + size + " bytes";
    const r = new Blob([z]).stream().pipeThrough(new DecompressionStream("deflate-raw")).getReader();
    const out = new Uint8Array(size);
    let n = 0;
    for (;;) {
      let c;
      try { c = await r.read(); } catch (x) { throw new Error("its deflated bytes: " + x.message); }
      if (c.done) break;
      if (n + c.value.length > size) { r.cancel(); throw new Error(bad); }
      out.set(c.value, n);
      n += c.value.length;
    }
    if (n !== size) throw new Error(bad);
    return out;
  };
  const eq = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

  class Fail extends Error {
    // where: a list naming the part that fails, outermost first.
    constructor(where, reason) { super(reason); this.where = where; }
  }
  const fail = (where, reason) => { throw new Fail(where, reason); };

  // ---- a strict JSON reader: RFC 8259, no member twice in an object ----
  // Objects and arrays nest at most this deep: the limit of Go's
  // encoding/json, so that truss ledger verify and the page refuse the
  // same lines.
  const MAX_DEPTH = 10000;
  // A ledger's entries inflate to at most this many bytes, and at most
  // ENTRIES_RATIO times their deflated bytes and 64 KiB more; its pack to
  // at most MAX_PACK; as in the Go verifier (page.MaxEntries,
  // page.MaxPack).
  const MAX_ENTRIES = 64 * 1024 * 1024;
  const ENTRIES_RATIO = 16;
  const MAX_PACK = 64 * 1024 * 1024;
  // It returns the value; for the outermost object it also keeps each
  // member's source text (raw), which is how an entry's v and seq are
  // checked to be integers as written.
  function parseStrict(s) {
    let i = 0;
    const raw = {};
    const ws = () => { while (i < s.length && " \t\n\r".includes(s[i])) i++; };
    const err = (m) => { throw new Error(m + " at character " + i); };
    // A string: its end found by the quotes and backslashes alone, its
    // escapes decoded by the browser's own JSON reader.
    const quoteOrEscape = /["\\]/g;
    const control = /[\u0000-\u001f]/;
    function str() {
      if (s[i] !== '"') err("a string expected");
      const start = i;
      let j = i + 1;
      let escaped = false;
      for (;;) {
        quoteOrEscape.lastIndex = j;
        const m = quoteOrEscape.exec(s);
        if (!m) { i = s.length; err("an unterminated string"); }
        if (m[0] === '"') { j = m.index; break; }
        escaped = true;
        j = m.index + 2;
      }
      const body = s.slice(start + 1, j);
      if (control.test(body)) { i = start; err("a control character in a string"); }
      i = j + 1;
      if (!escaped) return body;
      try { return JSON.parse(s.slice(start, j + 1)); } catch (x) { i = start; err("a bad escape"); }
    }
    // A number of any length, read where the reader is (sticky).
    const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    function scalar() {
      const start = i;
      if (s[i] === '"') return str();
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(s);
      if (m && m[0].length > 0 && m[0] !== "-") { i += m[0].length; return Number(m[0]); }
      for (const [w, x] of [["true", true], ["false", false], ["null", null]]) {
        if (s.startsWith(w, i)) { i += w.length; return x; }
      }
      i = start;
      err("a value expected");
    }
    // key reads an object's next member name and its ':'.
    function key(f) {
      ws();
      const k = str();
      if (f.seen.has(k)) err("an object has the member " + JSON.stringify(k) + " twice (a duplicate member)");
      f.seen.add(k);
      ws();
      if (s[i] !== ":") err("':' expected");
      i++;
      ws();
      f.key = k;
      f.vs = i;
    }
    // value reads one value without recursion: the objects and arrays it
    // is inside are a stack of their own, at most MAX_DEPTH deep (as Go's
    // encoding/json), so no nesting can exhaust the script's stack.
    function value() {
      const stack = [];
      for (;;) {
        ws();
        let v;
        const c = s[i];
        if (c === "{" || c === "[") {
          if (stack.length >= MAX_DEPTH) err("exceeded max depth (" + MAX_DEPTH + " nested objects and arrays)");
          i++;
          ws();
          if (c === "{") {
            const f = { obj: true, v: {}, seen: new Set(), key: "", vs: 0 };
            if (s[i] !== "}") { stack.push(f); key(f); continue; }
            i++;
            v = f.v;
          } else {
            const f = { obj: false, v: [] };
            if (s[i] !== "]") { stack.push(f); continue; }
            i++;
            v = f.v;
          }
        } else {
          v = scalar();
        }
        // v is complete: it goes into the container it is in, which
        // then takes its next value or is complete itself.
        for (;;) {
          if (stack.length === 0) return v;
          const f = stack[stack.length - 1];
          if (f.obj) {
            if (stack.length === 1) raw[f.key] = s.slice(f.vs, i);
            Object.defineProperty(f.v, f.key, { value: v, enumerable: true, writable: true, configurable: true });
          } else {
            f.v.push(v);
          }
          ws();
          if (s[i] === ",") { i++; if (f.obj) key(f); break; }
          if (s[i] === (f.obj ? "}" : "]")) { i++; stack.pop(); v = f.v; continue; }
          err(f.obj ? "',' or '}' expected" : "',' or ']' expected");
        }
      }
    }
    const v = value();
    ws();
    if (i !== s.length) throw new Error("bytes after the entry's object");
    return { v, raw };
  }

  // parseFast reads what parseStrict reads, the same value and the same
  // raw members, faster: the browser's JSON.parse (RFC 8259, as
  // parseStrict's grammar) makes the value, and one pass over the
  // tokens of what it accepted finds what JSON.parse does not refuse (a
  // member twice, nesting deeper than MAX_DEPTH) and the outermost
  // members' source text. It returns null for anything it does not
  // accept, and parseStrict then reads the line and names what is wrong.
  const TOKEN = /"[^"\\]*(?:\\.[^"\\]*)*"|[{}[\],:]|[^"{}[\],:]+/y;
  function parseFast(s) {
    let v;
    try { v = JSON.parse(s); } catch (e) { return null; }
    const raw = {};
    const stack = []; // each open object's member names, or null for an array
    let name = false; // the next string is a member's name
    let member = null; // the outermost object's member being read,
    let vs = 0; // and where its value begins
    TOKEN.lastIndex = 0;
    while (TOKEN.lastIndex < s.length) {
      const at = TOKEN.lastIndex;
      const m = TOKEN.exec(s);
      if (!m) return null;
      const t = m[0];
      switch (t) {
        case "{":
        case "[":
          if (stack.length >= MAX_DEPTH) return null;
          stack.push(t === "{" ? new Set() : null);
          name = t === "{";
          break;
        case "}":
        case "]":
          if (stack.length === 1 && member !== null) raw[member] = s.slice(vs, at).trim();
          stack.pop();
          break;
        case ",":
          if (stack.length === 1 && member !== null) raw[member] = s.slice(vs, at).trim();
          name = stack[stack.length - 1] !== null;
          break;
        case ":":
          if (stack.length === 1) vs = TOKEN.lastIndex;
          break;
        default:
          if (name && t[0] === '"') {
            const k = t.includes("\\") ? JSON.parse(t) : t.slice(1, -1);
            const seen = stack[stack.length - 1];
            if (seen.has(k)) return null;
            seen.add(k);
            name = false;
            if (stack.length === 1) member = k;
          }
      }
    }
    return stack.length === 0 ? { v, raw } : null;
  }

  // ---- what every entry must be (docs/ledger.md) ----
  const MEMBERS = ["v", "seq", "time", "session", "type", "prev", "data", "payloads"];
  const DIGEST = /^[0-9a-f]{64}$/;
  const isObj = (x) => x !== null && typeof x === "object" && !Array.isArray(x);
  // A recorded name (docs/ledger.md, "Names"): a name that is valid UTF-8
  // is itself; any other is U+0000 and the lowercase hex digits of its
  // bytes, which are not UTF-8 and hold no NUL. decodeName returns {text}
  // (the name) or {bytes}; null for a string that records no name.
  const strictUTF8 = new TextDecoder("utf-8", { fatal: true });
  function decodeName(s) {
    if (typeof s !== "string") return null;
    if (!s.startsWith("\u0000")) return s.includes("\u0000") ? null : { text: s };
    const h = s.slice(1);
    if (!/^(?:[0-9a-f]{2})+$/.test(h)) return null;
    const b = new Uint8Array(h.length / 2);
    for (let i = 0; i < b.length; i++) b[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
    if (b.includes(0)) return null;
    try {
      strictUTF8.decode(b);
      return null; // valid UTF-8 is recorded as itself
    } catch (e) {
      return { bytes: b };
    }
  }
  // A change path is a recorded name whose bytes are a clean path: the
  // checks read the bytes one character each ('/' and '.' are themselves).
  const changePath = (p) => {
    const d = decodeName(p);
    if (d === null) return false;
    if (d.bytes) {
      p = "";
      for (const c of d.bytes) p += String.fromCharCode(c);
    } else p = d.text;
    return p !== "" && p !== "." && p !== ".." && !p.startsWith("../") && cleanPath(p) === p;
  };
  // The length of the valid UTF-8 sequence at b[i], 0 when none starts there.
  function utf8Len(b, i) {
    const c = b[i];
    if (c < 0x80) return 1;
    let n = 0, lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) { n = 3; if (c === 0xe0) lo = 0xa0; if (c === 0xed) hi = 0x9f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 4; if (c === 0xf0) lo = 0x90; if (c === 0xf4) hi = 0x8f; }
    if (n === 0 || i + n > b.length || b[i + 1] < lo || b[i + 1] > hi) return 0;
    for (let k = 2; k < n; k++) if (b[i + k] < 0x80 || b[i + k] > 0xbf) return 0;
    return n;
  }
  // showName is a recorded name as a person reads it: the name itself, or,
  // for one that is not UTF-8, quoted with each invalid byte as \xHH (as
  // `truss ledger show` writes it).
  function showName(s) {
    const d = decodeName(s);
    if (d === null) return JSON.stringify(String(s));
    if (d.text !== undefined) return d.text;
    const b = d.bytes;
    let out = '"';
    for (let i = 0; i < b.length;) {
      const n = utf8Len(b, i);
      if (n === 0) { out += "\\x" + HEX[b[i]]; i++; continue; }
      const ch = dec.decode(b.subarray(i, i + n));
      out += ch === '"' || ch === "\\" ? "\\" + ch : ch;
      i += n;
    }
    return out + '"';
  }
  function cleanPath(p) {
    const abs = p.startsWith("/");
    const out = [];
    for (const el of p.split("/")) {
      if (el === "" || el === ".") continue;
      if (el === "..") { if (out.length && out[out.length - 1] !== "..") out.pop(); else if (!abs) out.push(".."); continue; }
      out.push(el);
    }
    const s = (abs ? "/" : "") + out.join("/");
    return s === "" ? "." : s;
  }
  const fileDigest = (v) => typeof v === "string" && (v === "" || DIGEST.test(v));
  // toJSON writes v as JSON text, as JSON.stringify(v, null, indent)
  // does (up to 32 levels of indentation), without recursion: the browser's JSON.stringify recurses, and a
  // model's arguments nested a few thousand deep would exhaust its stack.
  function toJSON(v, indent) {
    const out = [];
    // (indented at most 32 levels, so that deep nesting does not draw
    // indentation quadratic in its depth)
    const nl = (d) => (indent ? "\n" + " ".repeat(indent * Math.min(d, 32)) : "");
    const todo = [{ x: v, d: 0 }]; // values to write and text to emit, last first
    while (todo.length) {
      const t = todo.pop();
      if (typeof t === "string") { out.push(t); continue; }
      const { x, d } = t;
      const arr = Array.isArray(x);
      if (!arr && !isObj(x)) { out.push(x === undefined ? "null" : JSON.stringify(x)); continue; }
      const keys = arr ? null : Object.keys(x);
      const n = arr ? x.length : keys.length;
      if (n === 0) { out.push(arr ? "[]" : "{}"); continue; }
      out.push(arr ? "[" : "{");
      const parts = [];
      for (let j = 0; j < n; j++) {
        parts.push((j ? "," : "") + nl(d + 1) + (arr ? "" : JSON.stringify(keys[j]) + (indent ? ": " : ":")));
        parts.push({ x: arr ? x[j] : x[keys[j]], d: d + 1 });
      }
      parts.push(nl(d) + (arr ? "]" : "}"));
      for (let j = parts.length - 1; j >= 0; j--) todo.push(parts[j]);
    }
    return out.join("");
  }
  const show = (v) => toJSON(v, 0);

  function checkTime(s) {
    const m = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?Z$/.exec(s);
    if (!m) throw new Error("time " + show(s) + " is not an RFC 3339 UTC time (2026-12-02T14:44:32.513054Z)");
    const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number);
    const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
    const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1];
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > days || h > 23 || mi > 59 || se > 59) {
      throw new Error("time " + show(s) + " is not a real date and time");
    }
  }

  function checkChanges(data) {
    if (!("results" in data)) return;
    const rs = data.results;
    if (rs === null) return;
    if (!Array.isArray(rs)) throw new Error("data.results is not an array");
    rs.forEach((res, i) => {
      if (!isObj(res)) throw new Error("data.results[" + i + "] is not an object");
      if (!("changes" in res) || res.changes === null) return;
      if (!Array.isArray(res.changes)) throw new Error("data.results[" + i + "].changes is not an array");
      res.changes.forEach((ch, j) => {
        const where = "data.results[" + i + "].changes[" + j + "]";
        if (!isObj(ch)) throw new Error(where + " is not an object");
        const bulk = "files" in ch;
        if (!changePath(ch.path) && !(bulk && ch.path === ".")) throw new Error(where + ": path " + show(ch.path) + " is not a clean path inside the workspace");
        if (!["add", "update", "delete"].includes(ch.kind)) throw new Error(where + ": kind " + show(ch.kind) + " is not add, update or delete");
        for (const k of ["before", "after"]) {
          if (k in ch && !fileDigest(ch[k])) throw new Error(where + ": " + k + " " + show(ch[k]) + " is not a digest (64 lowercase hex digits)");
        }
        if ("moved_to" in ch && !changePath(ch.moved_to)) throw new Error(where + ": moved_to path " + show(ch.moved_to) + " is not a clean path inside the workspace");
      });
    });
  }

  function checkFiles(data, payloads) {
    if ("files_count" in data) {
      const n = data.files_count;
      if (typeof n !== "number" || !Number.isInteger(n) || n <= 1000) throw new Error("data.files_count " + show(n) + " is not a count of more than 1000 files");
      if ("files" in data) throw new Error("data has both files and files_count");
      if (!("final_files" in payloads)) throw new Error("data.files_count without a final_files payload");
      return;
    }
    const fs = data.files;
    if (fs === undefined || fs === null) return;
    if (!isObj(fs)) throw new Error("data.files is not an object");
    for (const p of Object.keys(fs)) {
      if (!changePath(p)) throw new Error("data.files: path " + show(p) + " is not a clean path inside the workspace");
      if (!fileDigest(fs[p])) throw new Error("data.files: " + show(p) + "'s digest is not a digest (64 lowercase hex digits)");
    }
  }

  function checkCompact(data, payloads) {
    if (typeof data.digest !== "string" || !DIGEST.test(data.digest)) throw new Error("data.digest " + show(data.digest) + " is not a digest (64 lowercase hex digits)");
    if ("replaced" in payloads && payloads.replaced !== data.digest) throw new Error('payloads: "replaced" is ' + payloads.replaced + ", not data.digest " + data.digest);
  }

  // parseEntry checks one line by the rules every entry must follow; it
  // does not check v's value, seq's or prev's (the caller does).
  function parseEntry(line) {
    let p;
    try { p = parseFast(line) || parseStrict(line); } catch (e) { throw new Error("not a JSON entry: " + e.message); }
    const m = p.v;
    if (!isObj(m)) throw new Error("not a JSON object");
    for (const k of MEMBERS) if (!(k in m)) throw new Error("no member " + show(k));
    for (const k of Object.keys(m)) if (!MEMBERS.includes(k)) throw new Error("a member " + show(k) + " that entries do not have");
    for (const k of ["v", "seq"]) if (!/^-?(0|[1-9][0-9]*)$/.test(p.raw[k])) throw new Error("member " + show(k) + " is " + p.raw[k] + ", not an integer");
    for (const k of ["time", "session", "type", "prev"]) if (typeof m[k] !== "string") throw new Error("member " + show(k) + " is " + p.raw[k] + ", not a string");
    checkTime(m.time);
    for (const k of ["session", "type"]) if (m[k] === "") throw new Error("member " + show(k) + " is empty");
    if (!isObj(m.data)) throw new Error('member "data" is ' + p.raw.data.slice(0, 20) + ", not an object");
    if (!isObj(m.payloads)) throw new Error('member "payloads" is ' + p.raw.payloads.slice(0, 20) + ", not an object");
    for (const name of Object.keys(m.payloads).sort()) {
      const d = m.payloads[name];
      if (typeof d !== "string") throw new Error("payloads: " + show(name) + " is " + show(d) + ", not a digest");
      if (name === "") throw new Error("payloads: an empty payload name");
      if (!DIGEST.test(d)) throw new Error("payloads: " + show(name) + " is " + show(d) + ", not a digest (64 lowercase hex digits)");
    }
    if (m.seq < 0) throw new Error('member "seq" is ' + m.seq + ", negative");
    if (m.type === "tool.result" || m.type === "workspace.changes") checkChanges(m.data);
    else if (m.type === "session.end") checkFiles(m.data, m.payloads);
    else if (m.type === "context.compact") checkCompact(m.data, m.payloads);
    return m;
  }

  // ---- keys and signed notes ----
  async function parseVKey(vkey) {
    const t = String(vkey).trim();
    const a = t.indexOf("+"), b = a < 0 ? -1 : t.indexOf("+", a + 1);
    const parts = a < 0 || b < 0 ? [] : [t.slice(0, a), t.slice(a + 1, b), t.slice(b + 1)];
    if (parts.length !== 3 || !/^[0-9a-f]{8}$/.test(parts[1]) || parts[0] === "" || /\s/.test(parts[0])) throw new Error("a verifier key is name+8 hex digits+base64 key");
    let raw;
    try { raw = unb64(parts[2]); } catch (e) { throw new Error("the verifier key's key is not base64"); }
    if (raw.length !== 33 || raw[0] !== 1) throw new Error("the verifier key is not an Ed25519 key");
    const id = (await sha256(concat(enc.encode(parts[0] + "\n"), raw))).slice(0, 4);
    if (hex(id) !== parts[1]) throw new Error("the verifier key's hash does not match its name and key");
    let key;
    try {
      key = await subtle.importKey("raw", raw.slice(1), { name: "Ed25519" }, false, ["verify"]);
    } catch (e) {
      throw new Error("this browser cannot check Ed25519 signatures (WebCrypto: " + e.message + "); verify the page with truss ledger verify FILE");
    }
    return { name: parts[0], id, key, text: String(vkey).trim() };
  }

  const SIG_PREFIX = "\u2014 ";
  // openNote checks a signed note's form and its signature by k; it
  // returns the note's text.
  async function openNote(note, k) {
    for (const ch of note) {
      if (ch < " " && ch !== "\n") throw new Error("a malformed note");
    }
    const split = note.lastIndexOf("\n\n");
    if (split < 0) throw new Error("a malformed note");
    const text = note.slice(0, split + 1);
    const sigs = note.slice(split + 2);
    if (sigs === "" || !sigs.endsWith("\n")) throw new Error("a malformed note");
    let ok = false;
    let n = 0;
    for (const line of sigs.slice(0, -1).split("\n")) {
      if (!line.startsWith(SIG_PREFIX)) throw new Error("a malformed note");
      const rest = line.slice(SIG_PREFIX.length);
      const sp = rest.indexOf(" ");
      const name = sp < 0 ? rest : rest.slice(0, sp);
      const sb64 = sp < 0 ? "" : rest.slice(sp + 1);
      let sig;
      try { sig = unb64(sb64); } catch (e) { throw new Error("a malformed note"); }
      if (name === "" || /\s/.test(name) || name.includes("+") || sb64 === "" || sig.length < 5) throw new Error("a malformed note");
      if (++n > 100) throw new Error("a malformed note");
      if (name !== k.name || !eq(sig.slice(0, 4), k.id)) continue; // another signer's: ignored
      const good = await subtle.verify({ name: "Ed25519" }, k.key, sig.slice(4), enc.encode(text));
      if (!good) throw new Error("the signature by " + name + " does not verify");
      ok = true;
    }
    if (!ok) throw new Error("no signature by " + k.text);
    return text;
  }

  // ---- the tree ----
  // What a leaf or a node hashes is written into one buffer, used again
  // for the next: digest copies its input when it is called.
  let scratch = new Uint8Array(1 << 16);
  const room = (n) => {
    if (scratch.length < n) scratch = new Uint8Array(Math.max(n, 2 * scratch.length));
    return scratch;
  };
  // hashText hashes text's UTF-8 bytes after the bytes of prefix.
  const hashText = (prefix, text) => {
    const b = room(prefix.length + 3 * text.length);
    b.set(prefix);
    const { written } = enc.encodeInto(text, b.subarray(prefix.length));
    return sha256(b.subarray(0, prefix.length + written));
  };
  const NONE = new Uint8Array(0);
  // leafHash hashes a line's bytes as a leaf.
  const leafHash = (line) => {
    const b = room(1 + line.length);
    b[0] = 0;
    b.set(line, 1);
    return sha256(b.subarray(0, 1 + line.length));
  };
  const node = new Uint8Array(65);
  const nodeHash = (l, r) => {
    node[0] = 1;
    node.set(l, 1);
    node.set(r, 33);
    return sha256(node);
  };
  // ---- verification of one ledger ----
  // It returns {entries, leaves, report} or throws a Fail naming the part.
  async function verifyLedger(L, k, where, parentLink, maxPayload) {
    // M marks the end of each step of the outermost ledgers' check
    // (performance.mark "truss-parsed", …), which the browser benchmark
    // reports.
    const M = (n) => { if (!parentLink) performance.mark("truss-" + n); };
    if (!L || !isObj(L.checkpoints) || !isObj(L.payloads)) fail(where, "the page's ledger is not complete");
    // The entries: one stream, each line with its newline.
    if (!isObj(L.entries)) fail(where, "the entries: missing");
    const raw = await inflatePart("the entries", L.entries, MAX_ENTRIES, ENTRIES_RATIO, where);
    const lines = [];
    for (let i = 0, j; i < raw.length; i = j + 1) {
      j = raw.indexOf(10, i);
      if (j < 0) fail(where.concat("entry " + lines.length), "the entries end in a line without its newline");
      lines.push(raw.subarray(i, j));
    }
    M("inflated");
    const cpSizes = Object.keys(L.checkpoints).map((s) => {
      if (!/^(0|[1-9][0-9]*)$/.test(s)) fail(where, "checkpoint " + show(s) + ": not keyed by a tree size");
      return Number(s);
    }).sort((a, b) => a - b);
    // Every entry is read first, up to the first that breaks a rule; the
    // hashes are computed at once (WebCrypto works in parallel); then the
    // entries are checked in order, so that the failure named is the one
    // a verifier reading line by line meets first.
    const entries = [];
    let bad = null;
    // The lines' text: all of it decoded at once, or, when some line is
    // not UTF-8, each line on its own, to name the line.
    const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    let texts = null;
    try { texts = strict.decode(raw).split("\n"); } catch (x) { /* a line is named below */ }
    for (let i = 0; i < lines.length && !bad; i++) {
      try {
        let line = texts ? texts[i] : null;
        if (line === null) try { line = strict.decode(lines[i]); } catch (x) { throw new Error("the line is not UTF-8"); }
        const e = parseEntry(line);
        if (e.v !== 1) throw new Error("format version " + e.v + ", want 1");
        if (e.seq !== i) throw new Error("sequence number " + e.seq + ", want " + i + " (entries reordered, deleted or duplicated)");
        if (i > 0 && e.session !== entries[0].session) throw new Error("session " + show(e.session) + ", want " + show(entries[0].session));
        entries.push(e);
      } catch (x) {
        bad = { i, reason: x.message };
      }
    }
    M("parsed");
    const leaves = await Promise.all(entries.map((e, i) => leafHash(lines[i])));
    M("leaves");
    for (let i = 0; i < entries.length; i++) {
      if (entries[i].prev !== (i > 0 ? hex(leaves[i - 1]) : "")) {
        fail(i > 0 ? where.concat("entry " + (i - 1)) : where, "the entry was changed: its leaf hash no longer matches the next entry's prev link");
      }
    }
    if (bad) fail(where.concat("entry " + bad.i), bad.reason);
    const n = entries.length;
    // The tree: every perfect, aligned subtree, a level at a time.
    const levels = [leaves];
    while (levels[levels.length - 1].length > 1) {
      const below = levels[levels.length - 1];
      const pairs = [];
      for (let j = 0; j + 1 < below.length; j += 2) pairs.push(nodeHash(below[j], below[j + 1]));
      levels.push(await Promise.all(pairs));
    }
    M("tree");
    // The root of the first size leaves: its perfect subtrees, largest
    // first, folded from the right.
    const rootAt = async (size) => {
      if (size === 0) return sha256(new Uint8Array(0));
      const parts = [];
      let start = 0;
      for (let lvl = Math.floor(Math.log2(size)); lvl >= 0; lvl--) {
        const w = 2 ** lvl;
        if (start + w <= size) { parts.push(levels[lvl][start / w]); start += w; }
      }
      let r = parts[parts.length - 1];
      for (let i = parts.length - 2; i >= 0; i--) r = await nodeHash(parts[i], r);
      return r;
    };
    const session = n > 0 ? entries[0].session : "";
    const origin = k.name + "/session/" + session;
    // Signatures and roots, all at once; checked in order of size.
    const checked = await Promise.all(cpSizes.map(async (size) => {
      const note = L.checkpoints[String(size)];
      if (typeof note !== "string") return { err: "not a signed note" };
      let text;
      try { text = await openNote(note, k); } catch (x) { return { err: "failed to verify signatures on checkpoint: " + x.message }; }
      return { note, text, root: size <= n ? await rootAt(size) : null };
    }));
    M("checkpoints");
    let sealed = 0;
    let last = null;
    let count = 0;
    for (let c = 0; c < cpSizes.length; c++) {
      const size = cpSizes[c];
      const cw = where.concat("checkpoint " + size);
      const r = checked[c];
      if (r.err) fail(cw, r.err);
      const lines = r.text.split("\n");
      if (lines.length < 4) fail(cw, "invalid checkpoint - too few newlines");
      if (lines[0] === "") fail(cw, "invalid checkpoint - empty origin");
      if (!/^[0-9]+$/.test(lines[1])) fail(cw, "invalid checkpoint - size invalid");
      let root;
      try { root = unb64(lines[2]); } catch (x) { fail(cw, "invalid checkpoint - invalid hash"); }
      if (lines[0] !== origin) fail(cw, "got Origin " + show(lines[0]) + " but expected " + show(origin));
      if (Number(lines[1]) !== size) fail(cw, "it is a checkpoint of size " + lines[1]);
      if (size > n) fail(where.concat("entry " + n), "checkpoint " + size + " covers " + size + " entries, but only " + n + " exist (entries deleted or truncated)");
      if (!eq(root, r.root)) {
        const first = sealed < size ? sealed : 0;
        fail(where.concat("entry " + first), "checkpoint " + size + "'s root hash does not match the entries (an entry was changed, inserted or removed at or after entry " + first + ")");
      }
      sealed = size;
      last = { note: r.note, root };
      count++;
    }
    if (count === 0) fail(where, "no signed checkpoint: none of the " + n + " entries is sealed");
    if (sealed !== n) fail(where.concat("entry " + sealed), (n - sealed) + " entries after the last checkpoint (size " + sealed + "): a page holds sealed entries only");
    // unsealed, checked where the Go verifier checks it: absent, or how
    // many entries after the last checkpoint the page left out (a
    // positive integer); never a sub-agent's.
    let unsealed = 0;
    if ("unsealed" in L) {
      const u = L.unsealed;
      if (parentLink) fail(where, "a sub-agent's ledger has no unsealed entries (its link names its last checkpoint), but the page says it has");
      if (typeof u !== "number" || !Number.isInteger(u) || u <= 0 || u > Number.MAX_SAFE_INTEGER) fail(where, "unsealed " + show(u) + " is not a positive count of entries");
      unsealed = u;
    }
    // Payloads.
    const used = new Set();
    const rep = { entries: n, checkpoints: count, root: last.root, note: last.note, checked: 0, omitted: [], redacted: [], notEmbedded: [], session, unsealed };
    // A verified payload is kept as its text, when it is well-formed
    // text (its UTF-8 bytes are exactly what was hashed, and decode to
    // it), else as its bytes, decoded when shown.
    const textOf = new Map();
    const bytesOf = new Map();
    const sums = new Map();
    const pack = await inflatePack(L, entries, maxPayload, where);
    await Promise.all(Object.keys(L.payloads).map(async (d) => {
      const p = L.payloads[d];
      if (!isObj(p) || p.omitted || typeof p.redacted === "string") return;
      try {
        if (typeof p.text === "string" && typeof p.text.isWellFormed === "function" && p.text.isWellFormed()) {
          sums.set(d, { text: p.text, sum: hex(await hashText(NONE, p.text)) });
          return;
        }
        let b;
        if (typeof p.text === "string") b = enc.encode(p.text);
        else if (typeof p.base64 === "string" && p.base64 !== "") b = unb64(p.base64);
        else if (isObj(p.packed)) {
          const sp = p.packed;
          if (pack === null) throw new Error("packed, but the ledger has no pack");
          if (!Number.isInteger(sp.size) || sp.size < 0 || !(sp.size <= maxPayload)) throw new Error("a packed payload of " + sp.size + " bytes, larger than the page's limit of " + maxPayload);
          if (!Number.isInteger(sp.at) || sp.at < 0 || sp.at > pack.length - sp.size) throw new Error("its span of " + sp.size + " bytes at " + sp.at + " is outside the pack's " + pack.length + " bytes");
          b = pack.subarray(sp.at, sp.at + sp.size);
        } else b = new Uint8Array(0);
        sums.set(d, { b, sum: hex(await sha256(b)) });
      } catch (x) { sums.set(d, { err: x.message }); }
    }));
    M("payloads");
    for (let i = 0; i < n; i++) {
      const e = entries[i];
      for (const name of Object.keys(e.payloads).sort()) {
        const d = e.payloads[name];
        const p = L.payloads[d];
        const label = "entry " + i + " " + name;
        if (p === undefined) {
          if (!["request", "request_parts", "replaced"].includes(name)) fail(where.concat("entry " + i), "payload " + name + " (" + d + ") is not on the page");
          rep.notEmbedded.push(label);
          continue;
        }
        used.add(d);
        if (!isObj(p)) fail(where.concat("entry " + i), "payload " + name + ": not a payload");
        if (p.omitted) { rep.omitted.push(label); continue; }
        if (typeof p.redacted === "string") { rep.redacted.push(label); continue; }
        if (textOf.has(d) || bytesOf.has(d)) continue;
        const got = sums.get(d);
        if (got.err) fail(where.concat("entry " + i), "payload " + name + ": " + got.err);
        if (got.sum !== d) fail(where.concat("entry " + i), "payload " + name + ": content does not match its digest " + d);
        if (got.b) bytesOf.set(d, got.b);
        else textOf.set(d, got.text);
        rep.checked++;
      }
    }
    for (const d of Object.keys(L.payloads)) if (!used.has(d)) fail(where, "payload " + d + ": no entry names it");
    if (parentLink) await checkLink(parentLink, rep, last, entries, where);
    // Sub-agents: every link of a tool.result, in order.
    const links = [];
    entries.forEach((e, i) => {
      if (e.type !== "tool.result") return;
      for (const r of Array.isArray(e.data.results) ? e.data.results : []) {
        const lk = isObj(r) && isObj(r.agent) && isObj(r.agent.ledger) ? r.agent.ledger : null;
        if (lk) links.push({ entry: i, session: e.session, call: e.data.call_id, dir: lk.dir, size: lk.size, root: lk.root, checkpoint: lk.checkpoint });
      }
    });
    M("own");
    const agents = Array.isArray(L.agents) ? L.agents : [];
    if (links.length !== agents.length) fail(where, "the entries link " + links.length + " sub-agent ledgers, the page holds " + agents.length);
    const kids = [];
    for (let j = 0; j < links.length; j++) {
      const lk = links[j];
      const a = agents[j];
      if (!isObj(a) || a.entry !== lk.entry || a.dir !== lk.dir || !a.ledger) fail(where.concat("entry " + lk.entry), "sub-agent ledger " + lk.dir + " is not on the page");
      const child = await verifyLedger(a.ledger, k, where.concat("entry " + lk.entry, "sub-agent ledger " + lk.dir), lk, maxPayload);
      child.entry = lk.entry;
      child.dir = lk.dir;
      kids.push(child);
    }
    return { entries, payloads: L.payloads, bytesOf, textOf, rep, kids };
  }

  // inflatePack is ledger L's pack inflated, null when it has none. The
  // pack inflates to exactly its size, which is at most the page's limit
  // for each payload packed in it: no more is inflated.
  async function inflatePack(L, entries, maxPayload, where) {
    const named = new Set();
    for (const e of entries) for (const d of Object.values(e.payloads)) named.add(d);
    const n = Object.keys(L.payloads).filter((d) => named.has(d) && isObj(L.payloads[d]) && isObj(L.payloads[d].packed)).length;
    if (!("pack" in L)) return null;
    const k = L.pack;
    if (!isObj(k)) fail(where, "the pack: not a pack");
    if (n === 0) fail(where, "the pack: no payload is packed in it");
    if (Number.isInteger(k.size) && k.size > n * maxPayload) fail(where, "the pack: its size of " + k.size + " bytes is more than the page's limit of " + maxPayload + " for each of its " + n + " payloads");
    return inflatePart("the pack", k, MAX_PACK, 0, where);
  }

  // inflatePart is the bytes of k, {deflate, size}: its raw DEFLATE
  // stream in base64 inflated to exactly size bytes, at most max and,
  // when ratio is not 0, at most ratio times its deflated bytes and 64
  // KiB more.
  async function inflatePart(what, k, max, ratio, where) {
    if (!Number.isInteger(k.size) || k.size < 0 || k.size > max) fail(where, what + ": a size of " + show(k.size) + " bytes, not from 0 to " + max);
    let z;
    try { z = unb64(String(k.deflate)); } catch (x) { fail(where, what + ": its deflated bytes: not base64"); }
    if (ratio > 0 && k.size > ratio * z.length + 65536) fail(where, what + ": a size of " + k.size + " bytes from " + z.length + " deflated, more than " + ratio + " times as many");
    try {
      return await inflate(z, k.size);
    } catch (x) {
      fail(where, what + ": " + x.message);
    }
  }

  async function checkLink(lk, rep, last, entries, where) {
    const dir = typeof lk.dir === "string" ? lk.dir : "";
    if (dir === "" || dir.startsWith("/") || dir.split("/").includes("..")) fail(where, "the link's directory " + show(dir) + " is not inside the ledger");
    if (lk.size !== rep.entries) fail(where, "the link names a tree of " + lk.size + " entries, but its last checkpoint covers " + rep.entries);
    let root;
    try { root = unb64(String(lk.root)); } catch (x) { root = new Uint8Array(0); }
    if (!eq(root, last.root)) fail(where, "its root hash is not the one the link names");
    if (lk.checkpoint !== hex(await sha256(enc.encode(last.note)))) fail(where, "its last checkpoint is not the one the link names");
    if (entries.length === 0 || entries[0].type !== "session.start") fail(where.concat("entry 0"), "it does not begin with session.start");
    const p = isObj(entries[0].data.parent) ? entries[0].data.parent : {};
    if (p.session !== lk.session) fail(where.concat("entry 0"), "its session.start names parent session " + show(p.session) + ", not " + show(lk.session));
    if (p.call_id !== lk.call) fail(where.concat("entry 0"), "its session.start names spawn call " + show(p.call_id) + ", not " + show(lk.call));
  }

  // ---- a session's runs: one chain, each ended ----
  // previousOf returns what a run's session.start names as the run
  // before it (null for a first run), as the Go verifier reads it.
  function previousOf(entries, where) {
    if (entries.length === 0 || entries[0].type !== "session.start") return null;
    const p = entries[0].data.previous;
    if (p === undefined || p === null) return null;
    if (!isObj(p) || typeof p.dir !== "string" || typeof p.root !== "string" || typeof p.checkpoint !== "string" ||
        typeof p.size !== "number" || !Number.isInteger(p.size) || p.size < 0) {
      fail(where.concat("entry 0"), "its session.start's previous is not {dir, size, root, checkpoint}");
    }
    return p;
  }

  // checkNext checks that run cur (the i-th, 1-based) follows prev: the
  // same session, and cur's session.start names prev's ledger by its
  // name and its last checkpoint (size, root, the SHA-256 of its bytes).
  async function checkNext(prev, prevDir, cur, curDir, i) {
    const where = ["run " + i + " (" + curDir + ")", "entry 0"];
    if (cur.rep.session !== prev.rep.session) fail(where, "session " + show(cur.rep.session) + ", but run " + (i - 1) + "'s is " + show(prev.rep.session) + ": the runs are not of one session");
    const p = previousOf(cur.entries, where.slice(0, 1));
    if (!p) fail(where, "its session.start names no previous run, but it follows run " + (i - 1) + " (" + prevDir + "): runs spliced or reordered, or a session resumed by a version of Truss that did not chain its runs");
    if (p.dir !== prevDir) fail(where, "it continues the run of ledger " + show(p.dir) + ", but the run before it is " + show(prevDir) + ": a run dropped, reordered or spliced");
    if (p.size !== prev.rep.entries) fail(where, "it continues " + p.dir + " at its checkpoint of size " + p.size + ", but " + prevDir + "'s last checkpoint is of size " + prev.rep.entries + ": that run was cut short or changed");
    let root;
    try { root = unb64(p.root); } catch (x) { root = new Uint8Array(0); }
    if (!eq(root, prev.rep.root)) fail(where, "it continues " + p.dir + " at a root hash that is not its last checkpoint's");
    if (p.checkpoint !== hex(await sha256(enc.encode(prev.rep.note)))) fail(where, "it continues " + p.dir + " at a checkpoint that is not its last");
  }

  // notEnded says why a run's sealed entries do not end with session.end
  // (followed only by what is written after a run ends: the verification
  // boundary's validation, a benchmark's bench.verdict); null when they do.
  function notEnded(entries) {
    if (entries.length === 0) return "the run has no sealed entry";
    let i = entries.length - 1;
    while (i >= 0 && (entries[i].type === "validation" || entries[i].type === "bench.verdict")) i--;
    if (i >= 0 && entries[i].type === "session.end") return null;
    const last = entries.length - 1;
    return "the run ends at entry " + last + " (" + entries[last].type + ") without session.end: it was cut short, or is still running";
  }

  // ---- drawing: elements and text nodes only ----
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k === "open") e.open = !!v;
      else e.setAttribute(k, String(v));
    }
    for (const c of kids.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(visible(String(c))));
    }
    return e;
  }
  // visible shows the characters that reorder or hide text (bidirectional
  // controls, marks, zero-width characters) as their code points, so that
  // no text of the model's can reverse or hide what is drawn beside it.
  function visible(s) {
    return s.replace(/[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g, (c) => "\u27e8U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e9");
  }
  // oneLine shows a name's line breaks and other controls escaped, for a
  // line of its own (a diff's header).
  function oneLine(s) {
    return String(s).replace(/[\u0000-\u001f\u007f]/g, (c) => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"));
  }
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const c of kids.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(visible(String(c))));
    return e;
  }

  // One formatter for every count: toLocaleString makes a new one per
  // call, which drawing a long session pays thousands of times.
  const intFormat = new Intl.NumberFormat("en-US");
  const fmtInt = (n) => (typeof n === "number" ? intFormat.format(n) : "–");
  const fmtDur = (ms) => (ms < 1 ? ms.toFixed(2) + " ms" : ms < 1000 ? ms.toFixed(0) + " ms" : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s");
  const fmtCost = (c) => (typeof c === "number" ? "$" + c.toFixed(c < 0.01 ? 5 : 4) : "–");
  // tokensText is a recorded usage's tokens: "in" is every input token (the
  // recorded input_tokens is the uncached part only, the cache's parts
  // beside it), then the cache's parts when there are any.
  const tokensText = (u, sep) => {
    const num = (n) => (typeof n === "number" ? n : 0);
    const input = typeof u.input_tokens === "number" ? num(u.input_tokens) + num(u.cache_read_tokens) + num(u.cache_write_tokens) : undefined;
    return "in " + fmtInt(input) + sep + "out " + fmtInt(u.output_tokens) + (u.cache_read_tokens ? " · cache read " + fmtInt(u.cache_read_tokens) : "") +
      (u.cache_write_tokens ? " · cache write " + fmtInt(u.cache_write_tokens) : "");
  };
  const ms = (t) => {
    const m = /^(.*T\d\d:\d\d:\d\d)(\.(\d+))?Z$/.exec(t);
    if (!m) return NaN;
    const frac = m[3] ? Number(("0." + m[3])) * 1000 : 0;
    return Date.parse(m[1] + "Z") + frac;
  };

  // A payload's text as the page shows it: verified bytes, or the
  // redacted text marked as such, or why it is not here.
  function payload(V, e, name) {
    const d = e.payloads[name];
    if (!d) return null;
    const p = V.payloads[d];
    if (!p) return { missing: "not on this page", d };
    if (p.omitted) return { missing: "left out: " + p.omitted + " (" + fmtInt(p.size) + " bytes)", d };
    if (typeof p.redacted === "string") return { text: p.redacted, redacted: true, d };
    // The verified text, or bytes decoded once however often they are
    // shown.
    let text = V.textOf.get(d);
    if (text === undefined) {
      text = dec.decode(V.bytesOf.get(d));
      V.textOf.set(d, text);
    }
    return { text, d };
  }

  // lazy makes box (a <details>) draw its content the first time it is
  // open: at once when it is drawn open, else when the reader opens it.
  // build draws from the verified ledger its closure holds, never from
  // the page: what it draws is as verified as what is drawn at first.
  function lazy(box, build) {
    let built = false;
    const fill = () => {
      if (built || !box.open) return;
      built = true;
      build(box);
    };
    box.addEventListener("toggle", fill);
    fill();
    return box;
  }

  // countLines counts a text's lines as split("\n") would, without
  // making the pieces.
  function countLines(text) {
    let n = 1;
    for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
    return n;
  }

  function payloadView(pl, label, foldLines) {
    if (!pl) return null;
    const head = el("span", { class: "plabel" }, label, " ", el("span", { class: "digest" }, "sha256 " + pl.d.slice(0, 16) + "…"));
    if (pl.missing) return el("div", { class: "payload missing" }, head, " — ", pl.missing);
    const badge = pl.redacted ? el("span", { class: "badge bad" }, "redacted, unverified") : el("span", { class: "badge ok" }, "verified");
    const text = pl.text;
    const lines = countLines(text);
    // A long payload is folded, and drawn when opened.
    if (lines > (foldLines || 12) || text.length > 4000) {
      return lazy(el("details", { class: "payload" }, el("summary", {}, head, " ", badge, " ", lines + " lines, " + fmtInt(text.length) + " characters")),
        (box) => box.append(el("pre", { class: "out" }, text)));
    }
    return el("div", { class: "payload" }, head, " ", badge, el("pre", { class: "out" }, text));
  }

  // The model's text and reasoning summary, read from the response body
  // as received, in any of the dialects Truss speaks.
  function readResponse(text) {
    const out = { text: "", reasoning: "" };
    const objs = [];
    const t = text.trimStart();
    if (t.startsWith("event:") || t.startsWith("data:")) {
      for (const line of text.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const s = line.slice(5).trim();
        if (s === "[DONE]") continue;
        try { objs.push(JSON.parse(s)); } catch (x) { /* a line of another kind */ }
      }
    } else {
      for (const line of text.split("\n")) {
        if (line.trim() === "") continue;
        try { objs.push(JSON.parse(line)); } catch (x) { /* not NDJSON */ }
      }
      if (objs.length === 0) { try { objs.push(JSON.parse(text)); } catch (x) { /* unreadable */ } }
    }
    let completed = null;
    let deltas = false;
    for (const o of objs) {
      if (!isObj(o)) continue;
      switch (o.type) {
        case "content_block_start":
          if (isObj(o.content_block) && o.content_block.type === "text" && o.content_block.text) out.text += o.content_block.text;
          if (isObj(o.content_block) && o.content_block.type === "thinking" && o.content_block.thinking) out.reasoning += o.content_block.thinking;
          continue;
        case "content_block_delta":
          if (isObj(o.delta) && o.delta.type === "text_delta") out.text += o.delta.text || "";
          if (isObj(o.delta) && o.delta.type === "thinking_delta") out.reasoning += o.delta.thinking || "";
          continue;
        case "response.output_text.delta": out.text += o.delta || ""; deltas = true; continue;
        case "response.reasoning_summary_text.delta": out.reasoning += o.delta || ""; deltas = true; continue;
        case "response.completed": completed = o.response; continue;
        case "message": // a whole Anthropic message
          for (const c of Array.isArray(o.content) ? o.content : []) {
            if (c.type === "text") out.text += c.text || "";
            if (c.type === "thinking") out.reasoning += c.thinking || "";
          }
          continue;
      }
      if (Array.isArray(o.choices)) {
        for (const c of o.choices) {
          const m = isObj(c.delta) ? c.delta : isObj(c.message) ? c.message : {};
          if (typeof m.content === "string") out.text += m.content;
          if (typeof m.reasoning_content === "string") out.reasoning += m.reasoning_content;
          if (typeof m.reasoning === "string") out.reasoning += m.reasoning;
        }
      } else if (isObj(o.message)) {
        if (typeof o.message.content === "string") out.text += o.message.content;
        if (typeof o.message.thinking === "string") out.reasoning += o.message.thinking;
      } else if (o.object === "response") {
        completed = o;
      }
    }
    if (!deltas && completed && Array.isArray(completed.output)) {
      for (const it of completed.output) {
        if (it.type === "message") for (const c of it.content || []) if (c.type === "output_text") out.text += c.text || "";
        if (it.type === "reasoning") for (const c of it.summary || []) out.reasoning += (out.reasoning ? "\n" : "") + (c.text || "");
      }
    }
    return out;
  }

  // ---- unified diff (Myers) ----
  // MAX_EDITS bounds the script (d) the diff looks for: its trace keeps
  // a copy of the frontier at every step, so time and memory grow with the
  // square of d. A file added or deleted whole is all one side, at once.
  const MAX_EDITS = 1000;
  function diffLines(a, b) {
    const n = a.length, m = b.length, max = n + m;
    if (n === 0) return b.map((l) => ["+", l]);
    if (m === 0) return a.map((l) => ["-", l]);
    const v = new Map([[1, 0]]);
    const trace = [];
    for (let d = 0; d <= Math.min(max, MAX_EDITS); d++) {
      trace.push(new Map(v));
      for (let k = -d; k <= d; k += 2) {
        let x = k === -d || (k !== d && v.get(k - 1) < v.get(k + 1)) ? v.get(k + 1) : v.get(k - 1) + 1;
        let y = x - k;
        while (x < n && y < m && a[x] === b[y]) { x++; y++; }
        v.set(k, x);
        if (x >= n && y >= m) {
          // Walk back.
          const ops = [];
          let cx = n, cy = m;
          for (let dd = d; dd > 0; dd--) {
            const pv = trace[dd];
            const kk = cx - cy;
            const prevK = kk === -dd || (kk !== dd && pv.get(kk - 1) < pv.get(kk + 1)) ? kk + 1 : kk - 1;
            const px = pv.get(prevK), py = px - prevK;
            while (cx > px && cy > py) { ops.push([" ", a[cx - 1]]); cx--; cy--; }
            if (cx === px) ops.push(["+", b[cy - 1]]); else ops.push(["-", a[cx - 1]]);
            cx = px; cy = py;
          }
          while (cx > 0 && cy > 0) { ops.push([" ", a[cx - 1]]); cx--; cy--; }
          return ops.reverse();
        }
      }
    }
    return null;
  }
  const splitLines = (s) => (s === "" ? [] : s.replace(/\n$/, "").split("\n"));
  function unified(before, after, ctx) {
    const ops = diffLines(splitLines(before), splitLines(after));
    if (!ops) return null;
    // Line numbers before each op.
    const pos = [];
    let ai = 0, bi = 0;
    for (const op of ops) {
      pos.push([ai, bi]);
      if (op[0] !== "+") ai++;
      if (op[0] !== "-") bi++;
    }
    const changed = [];
    ops.forEach((op, i) => { if (op[0] !== " ") changed.push(i); });
    const hunks = [];
    for (let c = 0; c < changed.length;) {
      let last = changed[c];
      let d = c + 1;
      while (d < changed.length && changed[d] - last <= 2 * ctx) { last = changed[d]; d++; }
      const from = Math.max(0, changed[c] - ctx), to = Math.min(ops.length, last + ctx + 1);
      const lines = ops.slice(from, to);
      hunks.push({ a: pos[from][0], b: pos[from][1], lines, na: lines.filter((l) => l[0] !== "+").length, nb: lines.filter((l) => l[0] !== "-").length });
      c = d;
    }
    return hunks;
  }

  // A diff of more lines than FOLD_DIFF is folded.
  const FOLD_DIFF = 80;
  function changeView(V, e, ch) {
    const before = ch.before ? payload(V, e, "content." + ch.before.slice(0, 16)) : null;
    const after = ch.after ? payload(V, e, "content." + ch.after.slice(0, 16)) : null;
    const title = ch.moved_to ? showName(ch.path) + " → " + showName(ch.moved_to) : showName(ch.path);
    const head = el("div", { class: "chhead" }, el("span", { class: "kind " + ch.kind }, ch.kind), " ", el("code", {}, title),
      ch.files ? " (" + fmtInt(ch.files) + " files)" : "",
      el("div", { class: "digests" }, "before ", ch.before ? ch.before : "—", el("br"), "after\u00a0 ", ch.after ? ch.after : "—"));
    const box = el("div", { class: "change" }, head);
    const why = [];
    for (const [side, pl] of [["before", before], ["after", after]]) {
      if (pl && pl.missing) why.push(side + ": " + pl.missing);
      if (pl && pl.redacted) why.push(side + ": redacted, unverified");
    }
    if (ch.before_unavailable) why.push("before: " + ch.before_unavailable);
    if (ch.after_unavailable) why.push("after: " + ch.after_unavailable);
    if (ch.link_before || ch.link_after) why.push("symlink " + (ch.link_before ? showName(ch.link_before) : "—") + " → " + (ch.link_after ? showName(ch.link_after) : "—"));
    if (why.length) box.append(el("div", { class: "note" }, why.join("; ")));
    const bt = before && !before.missing ? before.text : ch.before ? null : "";
    const at = after && !after.missing ? after.text : ch.after ? null : "";
    if (bt === null || at === null || ch.files) return box;
    const hunks = unified(bt, at, 3);
    if (!hunks) { box.append(el("div", { class: "note" }, "too large to diff here")); return box; }
    if (hunks.length === 0) { box.append(el("div", { class: "note" }, ch.moved_to ? "content unchanged" : "no change in content")); return box; }
    const diff = () => {
      const pre = el("pre", { class: "diff" });
      pre.append(el("span", { class: "dh" }, "--- " + (ch.kind === "add" ? "/dev/null" : "a/" + oneLine(showName(ch.path))) + "\n"));
      pre.append(el("span", { class: "dh" }, "+++ " + (ch.kind === "delete" ? "/dev/null" : "b/" + oneLine(showName(ch.moved_to || ch.path))) + "\n"));
      for (const h of hunks) {
        pre.append(el("span", { class: "hunk" }, "@@ -" + (h.a + 1) + "," + h.na + " +" + (h.b + 1) + "," + h.nb + " @@\n"));
        for (const [op, line] of h.lines) pre.append(el("span", { class: op === "+" ? "add" : op === "-" ? "del" : "ctx" }, op + line + "\n"));
      }
      return pre;
    };
    // A long diff is folded, and drawn when opened.
    const lines = hunks.reduce((n, h) => n + h.lines.length, 0);
    if (lines > FOLD_DIFF) {
      const adds = hunks.reduce((n, h) => n + h.lines.filter((l) => l[0] === "+").length, 0);
      const dels = hunks.reduce((n, h) => n + h.lines.filter((l) => l[0] === "-").length, 0);
      box.append(lazy(el("details", { class: "difffold" }, el("summary", {}, "diff: " + fmtInt(lines) + " lines, +" + fmtInt(adds) + " −" + fmtInt(dels) + " in " + fmtInt(hunks.length) + (hunks.length === 1 ? " hunk" : " hunks"))),
        (x) => x.append(diff())));
    } else {
      box.append(diff());
    }
    return box;
  }

  const kv = (pairs) => el("dl", { class: "kv" }, pairs.filter((p) => p[1] !== undefined && p[1] !== null && p[1] !== "").map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));

  // OPEN_TURNS turns of each ledger are drawn open, the first screen;
  // the others are folded and drawn when the reader opens them.
  const OPEN_TURNS = 5;

  // draw renders one verified ledger; depth > 0 is a sub-agent's. It
  // first reads the entries (no drawing): which turn each belongs to,
  // the timeline's spans and each entry's duration; then it draws the
  // entries outside turns, each turn's heading, and the bodies of the
  // first OPEN_TURNS turns. A folded turn's body, a folded payload, a
  // long diff and a sub-agent's ledger are drawn when opened, from the
  // same verified ledger.
  function draw(V, depth) {
    const root = el("div", { class: "ledger" });
    const spans = [];
    const prevOf = []; // the time of the entry before each: when what it records began
    const top = { items: [] }; // what root shows, in order: entries' indices and turns
    const callIn = new Map(); // a call's id: its entry and the block it is in
    let turn = null;
    let prevTime = NaN;
    V.entries.forEach((e, i) => {
      const d = e.data;
      const t = ms(e.time);
      prevOf.push(prevTime);
      const here = turn || top;
      switch (e.type) {
        case "model.response":
          if (isFinite(t - prevTime)) spans.push({ kind: "model", start: prevTime, end: t, label: "turn " + d.turn });
          turn = { i, items: [], calls: 0, errors: 0, tools: [] };
          top.items.push(turn);
          break;
        case "tool.call":
          here.items.push(i);
          callIn.set(d.call_id, { i, block: here });
          if (turn) {
            turn.calls++;
            if (!turn.tools.includes(d.tool)) turn.tools.push(d.tool);
          }
          break;
        case "tool.result": {
          // A result is drawn in its call's card, wherever that is.
          const c = callIn.get(d.call_id);
          if (c && isFinite(t - prevOf[c.i])) spans.push({ kind: "tool", start: prevOf[c.i], end: t, label: d.call_id });
          const block = c ? c.block : here;
          block.items.push(i);
          if (d.is_error && block !== top) block.errors++;
          break;
        }
        case "provider_tool":
        case "model.error":
          here.items.push(i);
          break;
        case "validation": {
          const sm = isObj(d.summary) ? d.summary : {};
          const dur = typeof sm.duration_ns === "number" ? sm.duration_ns / 1e6 : NaN;
          if (isFinite(dur)) spans.push({ kind: "validation", start: t - dur, end: t, label: "validation" });
          top.items.push(i);
          break;
        }
        default:
          top.items.push(i);
      }
      if (isFinite(t)) prevTime = t;
    });
    const cx = { V, depth, prevOf, kids: new Map(V.kids.map((c) => [c.entry, c])) };
    const calls = new Map();
    let turns = 0;
    for (const b of top.items) {
      if (typeof b === "number") drawEntry(cx, b, root, calls);
      else root.append(drawTurn(cx, b, turns++ < OPEN_TURNS));
    }
    if (depth === 0) root.prepend(timeline(spans));
    return root;
  }

  // drawTurn draws a turn: its heading, with a line of the model's text
  // when folded, and (when open) its body: the model's text and
  // reasoning, and its calls with their results.
  function drawTurn(cx, b, open) {
    const { V, depth, prevOf } = cx;
    const e = V.entries[b.i];
    const d = e.data;
    const u = isObj(d.usage) ? d.usage : {};
    const took = ms(e.time) - prevOf[b.i];
    const pl = payload(V, e, "response");
    const r = pl && !pl.missing && !pl.redacted ? readResponse(pl.text) : null;
    const first = r && r.text ? r.text.trim().split("\n", 1)[0] : "";
    const sec = el("section", { class: "turn", id: (depth ? "a" + depth + "-" : "") + "turn-" + d.turn });
    const head = el("h3", {}, "Turn " + d.turn, el("span", { class: "meta" }, " · " + d.stop_reason + " · " + (isFinite(took) ? fmtDur(took) : "") +
      " · " + tokensText(u, " · ") +
      (u.reasoning_tokens ? " · reasoning " + fmtInt(u.reasoning_tokens) : "") + " · " + fmtCost(u.cost_usd) +
      (b.calls ? " · " + b.calls + (b.calls === 1 ? " call: " : " calls: ") + b.tools.join(", ") : "") + (b.errors ? " · " + b.errors + (b.errors === 1 ? " error" : " errors") : "")));
    const box = el("details", { class: "turnbody", open }, el("summary", {}, head, first ? el("div", { class: "excerpt" }, first.length > 200 ? first.slice(0, 200) + "…" : first) : null));
    sec.append(lazy(box, (box) => {
      if (r && r.reasoning) box.append(lazy(el("details", { class: "reasoning" }, el("summary", {}, "Reasoning summary")), (x) => x.append(el("pre", { class: "prose" }, r.reasoning))));
      if (r && r.text) box.append(el("pre", { class: "prose model" }, r.text));
      if (!r) box.append(payloadView(pl, "response"));
      const calls = new Map();
      for (const i of b.items) drawEntry(cx, i, box, calls);
    }));
    return sec;
  }

  // drawEntry draws entry i (not a model.response) into box: a call's
  // card (kept in calls by its id), a result into its call's card.
  function drawEntry(cx, i, box, calls) {
    const { V, depth, prevOf } = cx;
    const e = V.entries[i];
    const d = e.data;
    const t = ms(e.time);
    switch (e.type) {
      case "session.start": {
        const tools = Array.isArray(d.tools) ? d.tools.map((x) => x.name + (x.type ? " (" + x.type + ")" : "")).join(", ") : "";
        box.append(el("section", { class: "start" }, el("h2", {}, depth ? "Sub-agent " + e.session : "Session " + e.session),
          kv([["model", d.model], ["provider", d.provider], ["surface", d.surface], ["tools", tools], ["sandbox", d.sandbox], ["workspace", d.workspace],
            ["repository", isObj(d.repo) ? d.repo.head + (d.repo.dirty ? " (dirty)" : "") : ""], ["truss", d.truss], ["started", e.time],
            ["spawned by", isObj(d.parent) ? d.parent.session + " / " + d.parent.call_id : ""]])));
        break;
      }
      case "user": {
        const pl = payload(V, e, "text");
        box.append(el("section", { class: "task" }, el("h3", {}, "Task"), pl && !pl.missing ? el("pre", { class: "prose" }, pl.text) : payloadView(pl, "text"), pl && pl.redacted ? el("span", { class: "badge bad" }, "redacted, unverified") : null));
        break;
      }
      case "tool.call": {
        const card = el("div", { class: "call" });
        const ops = Array.isArray(d.ops) ? d.ops : [];
        card.append(el("div", { class: "callhead" }, el("code", { class: "tool" }, d.tool), " ",
          el("span", { class: "meta" }, (d.kind || "") + (d.type ? " " + d.type : "") + " · surface " + (d.surface || "–") + " · " + d.call_id + (d.decoded === false ? " · NOT DECODED" : ""))));
        card.append(el("div", { class: "ops" }, el("div", { class: "plabel" }, "as Truss understood it"),
          ops.map((o) => el("div", { class: "op" }, el("code", { class: "opname" }, o.op), " ", el("pre", { class: "args" }, toJSON(o.args, 1))))));
        const inp = payload(V, e, "input");
        if (inp) card.append(payloadView(inp, "as the model sent it", 6));
        // The ledger writes a call's entry when it completes: the call
        // ran from the entry before it to its result.
        calls.set(d.call_id, { card, time: prevOf[i] });
        box.append(card);
        break;
      }
      case "tool.result": {
        const c = calls.get(d.call_id);
        const card = c ? c.card : el("div", { class: "call" }, el("div", { class: "callhead" }, "result of " + d.call_id));
        if (!c) box.append(card);
        const took = c ? t - c.time : NaN;
        const results = Array.isArray(d.results) ? d.results : [];
        const status = el("div", { class: "status " + (d.is_error ? "err" : "okk") }, d.is_error ? "error" : "ok", isFinite(took) ? " · " + fmtDur(took) : "");
        results.forEach((r, k) => {
          if (!isObj(r)) return;
          const bits = [r.op];
          if ("exit_code" in r) bits.push("exit status " + r.exit_code);
          if (r.timed_out) bits.push("timed out");
          if (r.error_kind) bits.push(r.error_kind);
          if (r.truncated) bits.push("truncated for the model");
          status.append(el("div", { class: "opres" }, bits.join(" · ")));
          if (isObj(r.approval)) status.append(el("div", { class: "note" }, "approval: " + [r.approval.kind, r.approval.decision, r.approval.by ? "by " + r.approval.by : "", "(" + r.approval.policy + ")"].filter(Boolean).join(" ")));
          if (isObj(r.mcp)) status.append(el("div", { class: "note" }, "MCP " + r.mcp.server + "/" + r.mcp.tool));
          for (const s of ["stdout", "stderr"]) { const pl = payload(V, e, s + "." + k); if (pl) status.append(payloadView(pl, s)); }
        });
        card.append(status);
        card.append(payloadView(payload(V, e, "output"), "result"));
        const mo = payload(V, e, "model_output");
        if (mo) card.append(payloadView(mo, "what the model read"));
        results.forEach((r, k) => {
          if (!isObj(r)) return;
          for (const ch of Array.isArray(r.changes) ? r.changes : []) card.append(changeView(V, e, ch));
          const diff = payload(V, e, "diff." + k);
          if (diff) card.append(payloadView(diff, "the isolated sub-agent's diff"));
          if (isObj(r.agent)) {
            const a = r.agent;
            const u = isObj(a.usage) ? a.usage : {};
            const kid = cx.kids.get(i);
            // The sub-agent's ledger is folded under its spawn call, and
            // drawn when opened.
            const sub = el("details", { class: "agent" }, el("summary", {}, el("span", { class: "plabel" }, "sub-agent " + a.session + " · " + a.status + " · " + a.turns + " turns · " + a.calls + " calls · " + tokensText(u, " ") + " · " + fmtCost(u.cost_usd)),
              kid ? [" ", el("span", { class: "badge ok" }, "ledger " + kid.dir + " verified: " + kid.rep.entries + " entries, linked by its last checkpoint")] : null));
            card.append(kid ? lazy(sub, (x) => x.append(draw(kid, depth + 1))) : sub);
          }
        });
        break;
      }
      case "provider_tool":
        box.append(el("div", { class: "call unverified" }, el("span", { class: "badge bad" }, "UNVERIFIED"), " executed by the provider: " + d.block, payloadView(payload(V, e, "block"), "block")));
        break;
      case "model.error":
        box.append(el("div", { class: "call err" }, "turn " + d.turn + " failed: " + d.error));
        break;
      case "context.compact":
        box.append(el("section", { class: "compact" }, el("h3", {}, "Context compacted (" + d.reason + ")"), el("p", {}, d.replaced + " items replaced by a summary · ~" + fmtInt(d.tokens_before) + " → ~" + fmtInt(d.tokens_after) + " tokens"),
          lazy(el("details", {}, el("summary", {}, "summary")), (x) => x.append(el("pre", { class: "prose" }, d.summary)))));
        break;
      case "workspace.changes": {
        const w = el("section", { class: "wchanges" }, el("h3", {}, "Changes found after the last call"));
        for (const r of Array.isArray(d.results) ? d.results : []) for (const ch of (isObj(r) && Array.isArray(r.changes)) ? r.changes : []) w.append(changeView(V, e, ch));
        box.append(w);
        break;
      }
      case "session.end": {
        const u = isObj(d.usage) ? d.usage : {};
        const files = isObj(d.files) ? Object.keys(d.files).sort().map((p) => el("li", {}, el("code", {}, showName(p)), " ", d.files[p] ? d.files[p].slice(0, 16) + "…" : "deleted")) : [];
        box.append(el("section", { class: "end" }, el("h3", {}, "Session ended: " + d.status), kv([["reason", d.reason], ["turns", d.turns], ["calls", d.calls],
          ["tokens", tokensText(u, " · ")], ["cost", fmtCost(u.cost_usd)],
          ["files left", d.files_count ? fmtInt(d.files_count) + " files" : files.length ? el("ul", {}, files) : "none"]])));
        break;
      }
      case "validation": {
        const s = isObj(d.summary) ? d.summary : {};
        const verdict = s.cancelled ? "CANCELLED (concludes nothing)" : s.ok ? "passed" : "FAILED";
        const dur = typeof s.duration_ns === "number" ? s.duration_ns / 1e6 : NaN;
        const v = el("section", { class: "validation " + (s.ok ? "pass" : "fail") }, el("h3", {}, (d.boundary ? "Verification boundary: " : "Validation: ") + verdict),
          kv([["by", d.boundary ? "Truss itself, after the session" + (d.when ? " (" + d.when + ")" : "") : "the model"], ["command", s.command], ["exit status", s.exit_code],
            [s.unit || "tests", fmtInt(s.passed) + " passed, " + fmtInt(s.failed) + " failed" + (s.skipped ? ", " + fmtInt(s.skipped) + " skipped" : "")],
            ["failures", Array.isArray(s.failures) ? s.failures.join(", ") : ""], ["duration", isFinite(dur) ? fmtDur(dur) : ""], ["setup failed", s.setup],
            ["environment", isObj(d.environment) ? d.environment.image + " " + (d.environment.image_id || "") : ""]]));
        v.append(payloadView(payload(V, e, "log"), "log"));
        box.append(v);
        break;
      }
      default:
        box.append(el("div", { class: "other" }, el("code", {}, e.type), " ", el("pre", { class: "args" }, toJSON(d, 0))));
    }
  }

  // timeline draws where the time went: model, tools, validation.
  function timeline(spans) {
    const fig = el("figure", { id: "timeline" });
    if (spans.length === 0) return fig;
    const t0 = Math.min(...spans.map((s) => s.start)), t1 = Math.max(...spans.map((s) => s.end));
    const span = Math.max(t1 - t0, 1);
    const W = 1000, lane = 26, left = 90;
    const lanes = ["model", "tool", "validation"];
    const names = { model: "model", tool: "tools", validation: "validation" };
    const tot = Object.fromEntries(lanes.map((k) => [k, spans.filter((s) => s.kind === k).reduce((n, s) => n + Math.max(0, s.end - s.start), 0)]));
    const g = svg("svg", { viewBox: "0 0 " + (W + left + 10) + " " + (lanes.length * lane + 30), width: "100%", role: "img", "aria-label": "timeline" });
    lanes.forEach((k, li) => {
      g.append(svg("text", { x: 0, y: li * lane + 17, class: "lbl" }, names[k]));
      g.append(svg("rect", { x: left, y: li * lane + 4, width: W, height: lane - 8, class: "lane" }));
    });
    for (const s of spans) {
      const li = lanes.indexOf(s.kind);
      const x = left + ((s.start - t0) / span) * W;
      const w = Math.max(((s.end - s.start) / span) * W, 0.8);
      const r = svg("rect", { x: x.toFixed(2), y: li * lane + 4, width: w.toFixed(2), height: lane - 8, class: "bar " + s.kind });
      r.append(svg("title", {}, s.label + ": " + fmtDur(s.end - s.start)));
      g.append(r);
    }
    g.append(svg("text", { x: left, y: lanes.length * lane + 20, class: "lbl" }, "0"));
    g.append(svg("text", { x: left + W, y: lanes.length * lane + 20, class: "lbl end" }, fmtDur(span)));
    fig.append(g, el("figcaption", {}, "Where the time went (between entries' times): model " + fmtDur(tot.model) + " · tools " + fmtDur(tot.tool) + " · validation " + fmtDur(tot.validation) + " · wall " + fmtDur(span)));
    return fig;
  }

  // ---- the page ----
  const verdictBox = document.getElementById("verdict");
  const main = document.getElementById("session");
  function setVerdict(ok, ...parts) {
    verdictBox.className = ok ? "ok" : "bad";
    verdictBox.replaceChildren(...parts.filter((p) => p !== null && p !== undefined).map((p) => (p instanceof Node ? p : document.createTextNode(String(p)))));
  }

  function listOf(label, items) {
    if (!items.length) return null;
    return el("details", { class: "left" }, el("summary", {}, label + ": " + items.length), el("ul", {}, items.map((x) => el("li", {}, x))));
  }

  async function run(trusted) {
    main.replaceChildren();
    let doc;
    performance.mark("truss-start"); // the script runs: the page has been read
    try {
      doc = JSON.parse(document.getElementById("truss-ledger").textContent);
      performance.mark("truss-json");
    } catch (e) {
      setVerdict(false, el("strong", {}, "NOT VERIFIED"), ": the page's embedded ledger is not valid JSON (" + e.message + ")");
      return;
    }
    if (!subtle) { setVerdict(false, el("strong", {}, "NOT VERIFIED"), ": this browser has no WebCrypto here; verify the page with truss ledger verify FILE"); return; }
    const keyText = trusted || doc.vkey;
    let k;
    try { k = await parseVKey(keyText); } catch (e) { setVerdict(false, el("strong", {}, "NOT VERIFIED"), ": key " + keyText + ": " + e.message); return; }
    const runs = [];
    try {
      if (doc.format !== "truss-session-page/3" || !Array.isArray(doc.runs) || doc.runs.length === 0) fail([], "not a Truss session page of a known format");
      for (let i = 0; i < doc.runs.length; i++) {
        if (!isObj(doc.runs[i])) fail([], "run " + (i + 1) + ": not a ledger");
        const dir = String(doc.runs[i].dir);
        const where = doc.runs.length > 1 ? ["run " + (i + 1) + " (" + dir + ")"] : [];
        const v = await verifyLedger(doc.runs[i], k, where, null, doc.max_payload);
        // The runs are one session's, in order: each resumed run names
        // the run before it by its last checkpoint.
        if (i > 0) await checkNext(runs[i - 1], String(doc.runs[i - 1].dir), v, dir, i + 1);
        else v.continues = previousOf(v.entries, where);
        v.notEnded = notEnded(v.entries);
        runs.push(v);
      }
    } catch (e) {
      const where = e instanceof Fail && e.where.length ? e.where.join(", ") + ": " : "";
      setVerdict(false, el("strong", { id: "verdict-text" }, "NOT VERIFIED"), el("span", { id: "verdict-where" }, " — " + where + e.message));
      document.title = "NOT VERIFIED · Truss session";
      return;
    }
    performance.mark("truss-verified");
    const count = (v) => v.rep.entries + v.kids.reduce((n, c) => n + count(c), 0);
    const all = (v, f) => f(v).concat(...v.kids.map((c) => all(c, f)));
    const n = runs.reduce((s, v) => s + count(v), 0);
    const omitted = [].concat(...runs.map((v) => all(v, (x) => x.rep.omitted)));
    const redacted = [].concat(...runs.map((v) => all(v, (x) => x.rep.redacted)));
    const notEmb = [].concat(...runs.map((v) => all(v, (x) => x.rep.notEmbedded)));
    const checked = runs.reduce((s, v) => s + all(v, (x) => [x.rep.checked]).reduce((a, b) => a + b, 0), 0);
    const byTrusted = trusted && trusted.trim() !== "";
    // What the proof does not cover, beside the verdict: a run that did
    // not end, entries left out unsealed, runs before the first.
    const notices = [];
    runs.forEach((v, i) => {
      const which = runs.length > 1 ? "run " + (i + 1) + ": " : "";
      if (v.notEnded) notices.push(el("div", { class: "notice notended" }, el("strong", {}, "NOT ENDED"), " — " + which + v.notEnded));
      if (v.rep.unsealed) notices.push(el("div", { class: "notice" }, el("strong", {}, "UNSEALED"), " — " + which + v.rep.unsealed + " entries after the last checkpoint are not on this page: unsealed"));
    });
    if (runs[0].continues) notices.unshift(el("div", { class: "notice" }, el("strong", {}, "NOT THE WHOLE SESSION"), " — this page begins at a resumed run: the runs before it (the last of them " + runs[0].continues.dir + ") are not on this page"));
    setVerdict(true, el("strong", { id: "verdict-text" }, "verified: " + n + " entries, signed by " + k.text),
      notices.length ? el("div", { id: "verdict-notices" }, notices) : null,
      el("div", { class: "sub" }, byTrusted ? "against the key you gave" : "against the key this page names (give the key you trust to check that it is theirs)",
        " · " + checked + " payloads checked · root " + b64(runs[runs.length - 1].rep.root)),
      listOf("payloads left out for their size (their digests are in the proof)", omitted),
      listOf("payloads shown redacted, so not verified (their digests are in the proof)", redacted),
      listOf("payloads this page does not show (request bodies), not checked here", notEmb));
    document.title = "Truss session " + runs[0].rep.session;
    for (let i = 0; i < runs.length; i++) {
      if (runs.length > 1) main.append(el("h2", { class: "run" }, "Run " + (i + 1) + " of " + runs.length));
      main.append(draw(runs[i], 0));
      if (runs[i].rep.unsealed) main.append(el("p", { class: "note" }, runs[i].rep.unsealed + " entries after the last checkpoint are not on this page: unsealed (no signature covers them)."));
      if (runs[i].notEnded) main.append(el("p", { class: "note notended" }, "NOT ENDED: " + runs[i].notEnded + "."));
    }
    performance.mark("truss-drawn");
    // The first frame after the drawing has been styled, laid out and
    // painted when a task queued from its animation frame runs.
    requestAnimationFrame(() => setTimeout(() => performance.mark("truss-painted"), 0));
  }

  // The key the reader trusts: ?key=, or the field.
  const form = el("form", { id: "keyform" }, el("label", { for: "key" }, "Verify against a key you trust: "), el("input", { id: "key", name: "key", size: 60, placeholder: "name+hash+key" }), el("button", { type: "submit" }, "Verify"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); run(document.getElementById("key").value); });
  verdictBox.after(form);
  const q = new URLSearchParams(location.search).get("key");
  if (q) document.getElementById("key").value = q;
  run(q || "").catch((e) => setVerdict(false, el("strong", {}, "NOT VERIFIED"), ": " + e.message));
})();
