#!/usr/bin/python3
"""spm.py writes spm-unigram-nmt-nfkc.json, a tokenizer in the form of
XLM-R's (and of the multilingual models distilled from it): sentencepiece's
Precompiled normalizer (its nmt_nfkc character map), whitespace runs
squeezed, Metaspace splitting, and a Unigram model. sentencepiece
(Debian's python3-sentencepiece 0.1.97 and python3-protobuf) trains the
model on sentences.json and compiles the map. The file is an input of
gen.mjs, which computes its reference ids; this script is here to say how
it was made and need not be rerun (another sentencepiece may train other
pieces)."""
import base64
import json
import os
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb

here = os.path.dirname(os.path.abspath(__file__))
texts = json.load(open(os.path.join(here, "sentences.json"), encoding="utf-8"))
with tempfile.TemporaryDirectory() as tmp:
    train = os.path.join(tmp, "train.txt")
    with open(train, "w", encoding="utf-8") as f:
        f.write("\n".join(t.replace("\n", " ") for t in texts if t.strip()))
    spm.SentencePieceTrainer.train(
        input=train, model_prefix=os.path.join(tmp, "m"), vocab_size=600, model_type="unigram",
        normalization_rule_name="nmt_nfkc", character_coverage=0.98, hard_vocab_limit=False,
        minloglevel=2, num_threads=1, seed_sentencepiece_size=100000)
    model = pb.ModelProto()
    with open(os.path.join(tmp, "m.model"), "rb") as f:
        model.ParseFromString(f.read())

special = lambda i, c: {"id": i, "content": c, "single_word": False, "lstrip": False,
                        "rstrip": False, "normalized": False, "special": True}
doc = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Precompiled",
         "precompiled_charsmap": base64.b64encode(model.normalizer_spec.precompiled_charsmap).decode()},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    "post_processor": None, "decoder": None,
    "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": False,
              "vocab": [[p.piece, 0.0 if p.type != 1 else p.score] for p in model.pieces]},
}
with open(os.path.join(here, "spm-unigram-nmt-nfkc.json"), "w", encoding="utf-8") as f:
    json.dump(doc, f, ensure_ascii=False)
    f.write("\n")
