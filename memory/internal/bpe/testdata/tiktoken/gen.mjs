// gen.mjs writes the reference token ids that memory/internal/bpe's
// TestMatchesOpenAI compares with, computed by OpenAI's tiktoken (the Rust
// library as WebAssembly, the npm package "tiktoken" pinned in
// package.json):
//
//   - texts.json: the texts, hand-written below and generated with a seeded
//     generator from runes of every class the encodings' pre-tokenizers
//     tell apart;
//   - expected.json: for each encoding, the ids of every text, in order,
//     from encode_ordinary (special tokens read as text).
//
// Usage, from this folder after `npm ci`:   node gen.mjs [OUTDIR]
// OUTDIR defaults to this folder. TIKTOKEN_PREFIX names another folder
// whose node_modules holds the package (.ci/run installs it in a temporary
// folder and compares what this script writes there with the committed
// files). The output depends only on the package version and this script.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const base = process.env.TIKTOKEN_PREFIX ? path.join(path.resolve(process.env.TIKTOKEN_PREFIX), "x.js") : import.meta.url;
const { get_encoding } = createRequire(base)("tiktoken");
const out = path.resolve(process.argv[2] || here);

// mulberry32: a small seeded generator, so every run writes the same files.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hand = [
  "",
  "Hello, world! It's 2026; we'll see.\n",
  "I'M HERE, YOU'RE THERE, THEY'VE GONE, HE'D SAY, WE'LL GO, IT'S, DON'T",
  "she's  they're   we've    i'm\t\tyou'll\r\n\r\nhe'd",
  "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'Re 'x '",
  "ſ 'ſ K 'K İ 'İ ǅungla ǈ ǋ Ǆ",
  "ʰA. 漢A! あBC? ʰʰAB, Aʰ. e\u0301X. 漢字ABC",
  "camelCase PascalCase snake_case kebab-case SCREAMING_CASE McDonald iPhone",
  "1 12 123 1234 12345 ١٢٣٤٥ ½ Ⅻ ²³ 3.14159 1,000,000 -42 +7e10",
  "path/to/file.go //comment /* block */ http://example.com/a/b?c=d&e=f#g",
  "!!!\n\n??? ... ---\r\n*** ///\n/ /x ,\n;\r",
  "   leading and trailing   ", "\n\n\n", " \n \n ", "\t \t x", "  1", "  !", "a  ",
  "x\u00a0y\u2003z\u3000w",
  "naïve café résumé coöperate e\u0301 a\u0308b \u0301\u0302 x\u20dd",
  "日本語のテキストです。中文文本。한국어 텍스트입니다.",
  "Привет, МИР! Ελληνικά ΚΕΊΜΕΝΟ. עברית ערבית عربي",
  "हिन्दी पाठ தமிழ் ภาษาไทย",
  "emoji 👋🏽 family 👨‍👩‍👧 flags 🇩🇪🇫🇷 keycap 1️⃣",
  "\u0000\u0001\u001f\u007f control \u200b zero\u200cwidth\u200djoin \ufeffbom",
  "tabs\tand\u000bvertical\fform\u0085next\u2028line\u2029para",
  "a".repeat(300) + " " + "ab".repeat(200) + "!".repeat(100),
  "user: we chose Dana for the launch on 2026-03-04 at 10:30.\nassistant: Noted.",
  "{\"role\":\"tool\",\"content\":[1,2,3],\"ok\":true}",
  "<|endoftext|> <|fim_prefix|> special tokens' text is ordinary text",
];

const alphabet = Array.from("aZ'sStTrReEvVmMlLdD 0159 \t\n\r\u000b\f.,!?/-_@#é\u0301\u0308Àßǅʰあ漢字Ωω١½Ⅻ\u00a0\u2003\u3000\u200b👋🏽\u0000");
const next = rng(29);
const generated = [];
for (let i = 0; i < 500; i++) {
  let s = "";
  const n = Math.floor(next() * 40);
  for (let j = 0; j < n; j++) s += alphabet[Math.floor(next() * alphabet.length)];
  generated.push(s);
}
const texts = [...hand, ...generated];

const expected = {};
for (const name of ["o200k_base", "cl100k_base", "p50k_base", "r50k_base"]) {
  const enc = get_encoding(name);
  expected[name] = texts.map((t) => Array.from(enc.encode_ordinary(t)));
  enc.free();
}
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, "texts.json"), JSON.stringify(texts, null, 0) + "\n");
fs.writeFileSync(path.join(out, "expected.json"), JSON.stringify(expected) + "\n");
