// gen.mjs writes the reference token ids that embed's tokenizer tests
// (TestTokenizerReference) compare with, computed by Hugging Face's
// tokenizers (the Rust library, through its Node bindings, the npm package
// "tokenizers" pinned in package.json):
//
//   - tiny-*.json: small tokenizer files, one per format the loader reads
//     (WordPiece and Unigram; BERT's normalizer and Model2Vec's Sequence of
//     normalizers; Metaspace, Whitespace and other pre-tokenizers), built
//     here from the sentences below with a seeded generator;
//   - sentences.json: the sentences, hand-written and generated below;
//   - expected/hand-*.json and expected/spm-*.json: the ids of the
//     tokenizers hand-*.json (written by hand; tests work out vectors from
//     their ids) and spm-*.json (written by spm.py with sentencepiece),
//     which are inputs;
//   - expected/<name>.json: for each tokenizer (those, and the two real
//     Model2Vec tokenizers in ../shared/data/model2vec when that folder
//     exists), the ids of every sentence, in order, encoded without
//     special tokens added, as Model2Vec's StaticModel.tokenize asks for
//     them.
//
// Usage, from this folder after `npm ci`:   node gen.mjs [OUTDIR]
// OUTDIR defaults to this folder. TOKENIZERS_PREFIX names another folder
// whose node_modules holds the package (.ci/run installs it in a temporary
// folder and compares what this script writes there with the committed
// files). The output depends only on the package version and this script.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const base = process.env.TOKENIZERS_PREFIX ? path.join(path.resolve(process.env.TOKENIZERS_PREFIX), "x.js") : import.meta.url;
const { Tokenizer } = createRequire(base)("tokenizers");
const out = path.resolve(process.argv[2] || here);
const shared = path.resolve(here, "..", "..", "..", "..", "shared", "data", "model2vec");

// mulberry32: a small seeded generator, so every run writes the same files.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The hand-written sentences: accents, CJK, emoji, numbers, long words,
// punctuation, whitespace runs, mixed case, control characters, special
// tokens' text and the characters tokenizers treat specially.
const written = [
  "", " ", "   ", "\t\n", "hello", "Hello, World!", "HELLO WORLD", "hElLo wOrLd",
  "The quick brown fox jumps over the lazy dog.",
  "Who owns my renewal? My renewal owner is Dana.",
  "I went to the gym last week and ran 5.5 km in 27:30.",
  "Caroline moved from Sweden 4 years ago; she's 32 now.",
  "running runner runs ran unaffable affable",
  "Café naïve résumé coöperate façade jalapeño Zürich Ærøskøbing",
  "CAFÉ NAÏVE RÉSUMÉ", "e\u0301te\u0301 (decomposed accents)", "Crème brûlée à la carte",
  "İstanbul ıṡ Iİıi", "Straße STRASSE ß ẞ", "ΣΊΣΥΦΟΣ σίσυφος ὀδυσσεύς", "Ωμέγα",
  "Привет, мир! Москва 2024", "Україна ґ є ї", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีครับ",
  "東京は日本の首都です。", "我爱北京天安门", "中文，标点！「引号」", "漢字かなカナ混じり文", "한국어 문장입니다", "안녕하세요 세계",
  "𠀀𠀁 (CJK extension B)", "㐀㐁 (extension A)", "ＡＢＣ　ｄｅｆ　１２３", "ｶﾀｶﾅ ﾊﾝｶｸ",
  "emoji 😀😃😄 and more 🎉🎊", "thumbs 👍🏽 family 👨‍👩‍👧‍👦 flag 🇸🇪 🏳️‍🌈", "new emoji 🥲 🫠 🪿 🫎", "❤️ ☺ ✔ ★ ☂",
  "numbers 0 1 12 123 1234 12345 123456789 3.14159 -42 +7 1e10 0x1F 1,000,000",
  "phone +1 (555) 123-4567, date 2023-05-07, time 10:45pm",
  "$100 €200 £300 ¥400 ₹500 50% 3/4 ½ ¾ ² ³ Ⅳ ⅻ ①②③",
  "supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis",
  "antidisestablishmentarianism floccinaucinihilipilification",
  "a".repeat(99), "b".repeat(100), "c".repeat(101), "ab".repeat(60), "hello".repeat(30),
  "!!!", "???!!!...", "...", "—–-", "“quoted” ‘single’ «guillemets» „low“", "(parens) [brackets] {braces} <angles>",
  "a,b.c;d:e!f?g", "email@example.com http://example.com/path?q=1&r=2#frag", "C:\\Users\\path\\file.txt",
  "snake_case kebab-case camelCase PascalCase SCREAMING_CASE", "#hashtag @mention ~tilde ^caret `backtick` |pipe|",
  "it's don't won't I'm you're they've", "rock'n'roll o'clock", "‘curly’ apostrophe’s",
  "multiple   spaces    here", "tabs\tand\ttabs", "new\nlines\n\nand\r\nCRLF", "\u00a0non-breaking\u00a0space",
  "ideographic\u3000space", "em\u2003space thin\u2009space", "zero\u200bwidth\u200cnon\u200djoiner", "soft\u00adhyphen",
  "bom\ufeffinside", "control\u0000char\u0007bell\u001bescape", "replacement \ufffd char", "line\u2028separator\u2029para",
  "\u0085next line", "vertical\u000btab form\u000cfeed", "direction\u200emarks\u200f", "  leading and trailing  ",
  "[CLS] classify [SEP] separate [MASK] mask [PAD] pad [UNK] unknown", "[CLS][SEP][CLS]", "x[UNK]y", "[cls] lower", "[ CLS ]",
  "<s> </s> <unk> <pad>", "<0x41> <0xFF>", "▁ metaspace ▁▁ char", "##ing ##s ## #", "▁hello ▁world",
  "ligature ﬁ ﬂ ﬀ", "superscript x² H₂O", "math ∑ ∫ √ ∞ ≠ ≤ ≥ ± × ÷", "arrows → ← ↑ ↓ ⇒", "box ─│┌┐ ░▒▓",
  "Mixed: HTTP/2 is FAST; http/1.1 isn't.", "O'Neill McDonald MacArthur van der Berg", "Ph.D. U.S.A. e.g. i.e. etc.",
  "The meeting is on Monday, May 8th at 3 PM.", "She said: \"I'll be there at 7!\"",
  "Recommend a restaurant: I love spicy Sichuan food and hate cilantro.",
  "Last Tuesday, two days before the trip, we booked the hotel.",
  "Vietnamese: Tiếng Việt có dấu", "Polish: Zażółć gęślą jaźń", "Czech: Příliš žluťoučký kůň", "Icelandic: Þetta er ðað",
  "Turkish: Ağaç ığdır şeker çiçek öğrenci üzüm", "Romanian: Știință și țară", "Hungarian: Árvíztűrő tükörfúrógép",
  "Greek: Καλημέρα κόσμε", "Armenian: Բարեւ", "Georgian: გამარჯობა", "Amharic: ሰላም", "Tamil: வணக்கம்", "Khmer: សួស្តី",
  "Japanese: おはようございます。今日はいい天気ですね！", "Korean jamo: ᄀᄁᄂ ᅡᅢ", "compat jamo: ㄱㄴㄷ",
  "mixed 中文English混合text", "数字123和字母abc", "全角！＂＃＄％", "half-width ｱｲｳ",
  "x", "I", "a b c d e f g h i j k l m n o p q r s t u v w x y z",
  "A B C D E F G H I J K L M N O P Q R S T U V W X Y Z", "0 1 2 3 4 5 6 7 8 9",
  "the the the the the", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "abcabcabcabcabcabc", "xyzzy plugh qwerty asdf",
  "Hello\u0301 wo\u0308rld", "a\u0300\u0301\u0302\u0303 stacked", "\u0301leading combining",
  "Ǆ ǅ ǆ Ǳ title case", "ﬀ ﬃ", "ＡＢＣ", "Ⓐⓑⓒ circled", "𝐀𝐁𝐂 𝒶𝒷𝒸 math alphanumerics",
  "tab\t\t\tseparated\t\tvalues", "trailing newline\n", "\n\nleading newlines", "end.",
  "I moved to New York last week to study machine learning.", "NEW YORK new york New  York newyork",
  "Engram ENGRAM engram EnGram", "c++ and C++ code, C++11", "an e-mail or an E-Mail", "東京タワー and 東京",
  "ﬁ\u0301 ﬂ\u0308 ﬁne", "㍿ ㌀ ℡ ™ ㎏", "ﻼ ﷺ ﹰ", "\u1100\u1161\u11a8 jamo 각", "Å A\u030a Å",
  "e\u0301\u0301\u0301 x\u20dd", "👩🏽‍💻 🧑‍🤝‍🧑", "ｈｅｌｌｏ　ｗｏｒｌｄ", "Ⅻ ⅲ ㊿ ⁹ ₉",
];

// Fragments the generated sentences are drawn from.
const fragments = [
  "memory", "recall", "Engram", "the", "a", "is", "was", "running", "unbelievable", "ran", "café", "CAFÉ", "Zoë",
  "東京", "北京", "한국", "ありがとう", "😀", "👍🏽", "🇸🇪", "42", "3.14", "2024-05-07", "100%", "$5",
  "don't", "rock'n'roll", "e-mail", "U.S.", "(see above)", "[CLS]", "[UNK]", "[SEP]", "<s>", "▁", "##", "…", "—",
  "  ", "\t", "\n", "\u00a0", "\u3000", "!", "?", ",", ".", ";", ":", "\"", "'", "İ", "ß", "Σ", "ﬁ", "½",
  "supercalifragilistic", "Ærøskøbing", "Привет", "مرحبا", "नमस्ते", "ΚΑΛΗΜΕΡΑ", "hello", "world", "fox", "dog",
  "renewal", "owner", "Dana", "Caroline", "Melanie", "Sweden", "yesterday", "last week", "in May 2023", "two days before",
];

function sentences() {
  const r = rng(27);
  const out = [...written];
  for (let i = 0; i < 260; i++) {
    const n = 1 + Math.floor(r() * 9);
    let s = "";
    for (let j = 0; j < n; j++) {
      const f = fragments[Math.floor(r() * fragments.length)];
      const sep = r() < 0.7 ? " " : r() < 0.5 ? "" : ", ";
      s += (j ? sep : "") + (r() < 0.2 ? f.toUpperCase() : f);
    }
    out.push(s);
  }
  return out;
}

// words splits the sentences into lowercase words and punctuation, the
// raw material of the tiny vocabularies.
function words(texts) {
  const seen = new Set();
  for (const t of texts) {
    for (const w of t.normalize("NFC").toLowerCase().split(/[\s\p{P}\p{S}]+/u)) {
      if (w) seen.add(w);
    }
  }
  return [...seen].sort();
}

function chars(texts) {
  const seen = new Set();
  for (const t of texts) for (const c of t.toLowerCase()) if (!/\s/u.test(c)) seen.add(c);
  return [...seen].sort();
}

// wordPieceVocab: specials, most single characters and their "##" forms,
// and for each word either itself or a prefix and "##" chunks.
function wordPieceVocab(texts, seed) {
  const r = rng(seed);
  const vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
  const add = (t) => { if (!vocab.includes(t)) vocab.push(t); };
  for (const c of chars(texts)) {
    if (r() < 0.9) add(c);
    if (r() < 0.6) add("##" + c);
  }
  for (const w of words(texts)) {
    const cs = [...w];
    if (r() < 0.4 || cs.length < 3) { add(w); continue; }
    let i = 1 + Math.floor(r() * (cs.length - 1));
    add(cs.slice(0, i).join(""));
    while (i < cs.length) {
      const j = Math.min(cs.length, i + 1 + Math.floor(r() * 4));
      add("##" + cs.slice(i, j).join(""));
      i = j;
    }
  }
  return Object.fromEntries(vocab.map((t, i) => [t, i]));
}

// unigramVocab: pieces with and without the metaspace mark, whole words,
// substrings and most single characters, with seeded scores rounded to
// 1/8 so that ties occur and the tie rule is tested.
function unigramVocab(texts, seed, head, mark = "\u2581") {
  const r = rng(seed);
  const vocab = head.map((t) => [t, 0]);
  const seen = new Set(head);
  const add = (t) => {
    if (seen.has(t) || t === "") return;
    seen.add(t);
    vocab.push([t, -Math.round((2 + r() * 12) * 8) / 8]);
  };
  add(mark);
  for (const c of chars(texts)) {
    if (r() < 0.85) add(c);
    if (r() < 0.3) add(mark + c);
  }
  for (const w of words(texts)) {
    const cs = [...w];
    if (r() < 0.5) add(mark + w);
    if (r() < 0.3) add(w);
    for (let k = 0; k < 3 && cs.length > 2; k++) {
      const i = Math.floor(r() * (cs.length - 1));
      const j = i + 1 + Math.floor(r() * Math.min(5, cs.length - i - 1));
      add((i === 0 && r() < 0.5 ? mark : "") + cs.slice(i, j).join(""));
    }
  }
  return vocab;
}

// GPT-2's bytes_to_unicode, and a text in that alphabet (UTF-8 bytes).
const byteChar = (() => {
  const t = [];
  let n = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    t.push(String.fromCodePoint(printable ? b : n++));
  }
  return t;
})();
const byteLevel = (s) => [...Buffer.from(s, "utf8")].map((b) => byteChar[b]).join("");

// byteLevelVocab: every byte's character, and byte-level pieces of words
// with and without their leading space, with seeded scores.
function byteLevelVocab(texts, seed) {
  const r = rng(seed);
  const vocab = [["<unk>", 0]];
  const seen = new Set(["<unk>"]);
  const add = (t, score) => {
    if (seen.has(t) || t === "") return;
    seen.add(t);
    vocab.push([t, score ?? -Math.round((2 + r() * 12) * 8) / 8]);
  };
  for (const c of byteChar) add(c, -16);
  for (const w of words(texts)) {
    if (r() < 0.5) add(byteLevel(" " + w));
    if (r() < 0.3) add(byteLevel(w));
    const b = byteLevel(w);
    for (let k = 0; k < 2 && b.length > 2; k++) {
      const i = Math.floor(r() * (b.length - 1));
      add(b.slice(i, i + 1 + Math.floor(r() * Math.min(4, b.length - i - 1))));
    }
  }
  return vocab;
}

const special = (id, content) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
const bertSpecials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].map((t, i) => special(i, t));
const doc = (added, normalizer, pre, model) => ({
  version: "1.0", truncation: null, padding: null, added_tokens: added, normalizer, pre_tokenizer: pre,
  post_processor: null, decoder: null, model,
});
const punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

// withAdded adds non-special added tokens to t, extending its vocabulary
// (a WordPiece object or a Unigram list) by those it lacks: normalized
// ones are matched in the normalised text, the others in the raw text.
function withAdded(t, tokens) {
  const m = t.model;
  let next = Array.isArray(m.vocab) ? m.vocab.length : Object.keys(m.vocab).length;
  for (const [content, normalized] of tokens) {
    // A token already in the vocabulary keeps its id.
    let id = Array.isArray(m.vocab) ? m.vocab.findIndex((p) => p[0] === content) : m.vocab[content] ?? -1;
    if (id < 0) {
      id = next++;
      if (Array.isArray(m.vocab)) m.vocab.push([content, 0]); else m.vocab[content] = id;
    }
    t.added_tokens.push({ id, content, single_word: false, lstrip: false, rstrip: false, normalized, special: false });
  }
  return t;
}

// The tiny tokenizers, one per format.
function tinyTokenizers(texts) {
  const bert = { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true };
  const wp = (seed, max) => ({
    type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: max,
    vocab: wordPieceVocab(texts, seed),
  });
  const uni = (seed, head, unk, fallback) => {
    let vocab = unigramVocab(texts, seed, head);
    if (fallback) {
      for (let b = 0; b < 256; b++) vocab.push([`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`, -20]);
    }
    return { type: "Unigram", unk_id: unk, vocab, byte_fallback: fallback };
  };
  return {
    // BERT's form: the streaming fast path.
    "tiny-wordpiece-bert": doc(bertSpecials, bert, { type: "BertPreTokenizer" }, wp(1, 20)),
    // The same vocabulary behind a cased BertNormalizer.
    "tiny-wordpiece-bert-cased": doc(bertSpecials, { ...bert, lowercase: false, strip_accents: true, handle_chinese_chars: false },
      { type: "BertPreTokenizer" }, wp(1, 100)),
    // WordPiece through the general pipeline.
    "tiny-wordpiece-sequence": doc(bertSpecials,
      { type: "Sequence", normalizers: [{ type: "NFD" }, { type: "StripAccents" }, { type: "Lowercase" }, { type: "Replace", pattern: { String: "\u2019" }, content: "'" }] },
      { type: "Sequence", pretokenizers: [{ type: "Whitespace" }, { type: "Digits", individual_digits: true }] }, wp(2, 100)),
    "tiny-wordpiece-whitespacesplit": doc(bertSpecials, { type: "Lowercase" }, { type: "WhitespaceSplit" }, wp(3, 100)),
    // Model2Vec's own form (what its distillation writes): BertNormalizer,
    // punctuation spaced out, whitespace runs squeezed, stripped; Metaspace
    // without splitting; Unigram.
    "tiny-unigram-model2vec": doc([special(0, "[PAD]"), special(1, "[UNK]")],
      { type: "Sequence", normalizers: [bert, ...[...punct].map((c) => ({ type: "Replace", pattern: { String: c }, content: ` ${c} ` })),
        { type: "Replace", pattern: { Regex: "\\s+" }, content: " " }, { type: "Strip", strip_left: true, strip_right: true }] },
      { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: false }, uni(4, ["[PAD]", "[UNK]"], 1, false)),
    // sentencepiece's form: NMT rules and NFKC, Metaspace splitting with
    // prepend_scheme "first", byte fallback.
    "tiny-unigram-sentencepiece": doc([special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
      { type: "Sequence", normalizers: [{ type: "Nmt" }, { type: "NFKC" }, { type: "Replace", pattern: { Regex: " {2,}" }, content: " " }] },
      { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: true }, uni(5, ["<unk>", "<s>", "</s>"], 0, true)),
    // Prepend and Replace instead of a pre-tokenizer; NFC; a Sequence of
    // BertPreTokenizer-free splitting is not needed here.
    "tiny-unigram-prepend": doc([special(0, "<unk>")],
      { type: "Sequence", normalizers: [{ type: "NFC" }, { type: "Prepend", prepend: "\u2581" }, { type: "Replace", pattern: { String: " " }, content: "\u2581" }] },
      null, uni(6, ["<unk>"], 0, false)),
    // Non-special added tokens (Model2Vec adds multi-word ones so), which
    // take the general pipeline even in BERT's form.
    "tiny-wordpiece-added": withAdded(doc([...bertSpecials], bert, { type: "BertPreTokenizer" }, wp(8, 100)),
      [["new york", true], ["machine learning", true], ["C++", false], ["東京", true]]),
    "tiny-unigram-added": withAdded(doc([special(0, "[PAD]"), special(1, "[UNK]")],
      { type: "Sequence", normalizers: [bert, ...[...punct].map((c) => ({ type: "Replace", pattern: { String: c }, content: ` ${c} ` })),
        { type: "Replace", pattern: { Regex: "\\s+" }, content: " " }, { type: "Strip", strip_left: true, strip_right: true }] },
      { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: false }, uni(9, ["[PAD]", "[UNK]"], 1, false)),
      [["new york", true], ["last week", true], ["e-mail", true], ["ENGRAM", false], ["東京", true]]),
    // ByteLevel, as Model2Vec keeps it when it turns a BPE tokenizer into
    // a Unigram one (add_prefix_space on, use_regex off), and GPT-2's
    // default (use_regex on).
    "tiny-unigram-bytelevel": doc([special(0, "<unk>")], { type: "NFC" },
      { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: false },
      { type: "Unigram", unk_id: 0, vocab: byteLevelVocab(texts, 10), byte_fallback: false }),
    "tiny-unigram-bytelevel-regex": doc([special(0, "<unk>")], null,
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
      { type: "Unigram", unk_id: 0, vocab: byteLevelVocab(texts, 11), byte_fallback: false }),
    // A Sequence of pre-tokenizers ending in Metaspace, no normalizer.
    "tiny-unigram-pretokenizers": doc([special(0, "<unk>")], null,
      { type: "Sequence", pretokenizers: [{ type: "WhitespaceSplit" }, { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true }] },
      uni(7, ["<unk>"], 0, false)),
  };
}

// expected returns the ids of each text, in the order of sentences.json.
async function expected(name, file, texts) {
  const tok = Tokenizer.fromFile(file);
  const ids = [];
  for (const text of texts) {
    const enc = await tok.encode(text, null, { addSpecialTokens: false });
    ids.push(enc.getIds());
  }
  return { tokenizer: name, ids };
}

function write(rel, value) {
  const p = path.join(out, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, JSON.stringify(value) + "\n");
}

const texts = sentences();
write("sentences.json", texts);
const tiny = tinyTokenizers(texts);
for (const [name, t] of Object.entries(tiny)) {
  write(`${name}.json`, t);
  write(`expected/${name}.json`, await expected(`${name}.json`, path.join(out, `${name}.json`), texts));
}
// Tokenizers written by hand (hand-*.json) or by spm.py (spm-*.json):
// inputs, not written here.
for (const f of fs.readdirSync(here).filter((f) => /^(hand|spm)-.*\.json$/.test(f)).sort()) {
  write(`expected/${f}`, await expected(f, path.join(here, f), texts));
}
for (const [name, rel] of [["potion-base-8M", "potion-base-8M-tokenizer/tokenizer.json"], ["vocab-quantized-unigram", "vocab-quantized-unigram/tokenizer.json"]]) {
  const file = path.join(shared, rel);
  if (!fs.existsSync(file)) {
    console.error(`gen.mjs: ${file} is absent; expected/${name}.json not written`);
    continue;
  }
  write(`expected/${name}.json`, await expected(`shared:model2vec/${rel}`, file, texts));
}
