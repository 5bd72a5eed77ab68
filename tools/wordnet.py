"""The real-English data of `make demo-real`, extracted from WordNet 3.0: `data/wordnet/`.

    python -m tools.wordnet            # write data/wordnet/*.tsv.gz from /usr/share/wordnet
    python -m tools.wordnet --check    # exit 1 unless they are reproduced byte for byte;
                                       # skips (exit 0) where WordNet is not installed

WordNet 3.0 (Princeton) as Debian's `wordnet-base` installs it, under `/usr/share/wordnet/`
(`$WORDNET_DIR` elsewhere). Every synset's gloss is its definition, then its example
sentences in double quotes: "sloping land (especially the slope beside a body of water);
"they pulled the canoe up on the bank"". Two files come of it, held apart, and WordNet's
licence (`LICENSE`), which must go with them:

    glosses.tsv.gz    synset, definition: the pre-training corpus, one definition a line,
                      the examples left out
    examples.tsv.gz   the example sentences in which a lemma of their synset stands as one
                      word (inflected or not): synset, lemma, pos, supersense, sense,
                      first_synset, first_supersense, position, word, sentence

A synset is named as NLTK names it, lemma.pos.nn (`bank.n.01`: the first sense of the noun
"bank"; pos n, v, a, s for a satellite adjective, r). In `examples.tsv.gz`, `lemma` is the
synset's lemma that the sentence uses, `pos` its part of speech (noun, verb, adjective,
adverb), `supersense` the synset's lexicographer file (`noun.artifact`: WordNet's coarse
senses), `sense` the synset's rank among the lemma's senses of that part of speech (1:
WordNet's first, the most frequent in its sense-tagged corpus), `first_synset` and
`first_supersense` those of the lemma's first sense, and `position` the index of `word`
among the sentence's words as section 2's `tokenize` splits it: the first word that
matches the synset's first lemma that any word matches. A word matches a lemma as
WordNet's morphology finds a base form (`morphy`): its exception lists (`noun.exc` ...),
then its suffix rules ("-ies" -> "-y", "-ing" -> "" or "-e", ...).

The files are gzip with no name and no time in their header, rows in WordNet's order (part
of speech, then offset), so that the same WordNet always gives the same bytes; `--check`
compares them with the committed ones.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from course.registry import ROOT, shown
from tools import reference

WORDNET_DIR = Path(os.environ.get("WORDNET_DIR", "/usr/share/wordnet"))
OUT = ROOT / "data" / "wordnet"
FILES = ("glosses.tsv.gz", "examples.tsv.gz", "LICENSE")
EXAMPLE_COLUMNS = ("synset", "lemma", "pos", "supersense", "sense", "first_synset",
                   "first_supersense", "position", "word", "sentence")
PARTS_OF_SPEECH = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}  # file suffix: letter
POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
# WordNet's lexicographer files, by number (lexnames(5WN)): the supersenses.
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance",
    "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion",
    "verb.motion", "verb.perception", "verb.possession", "verb.social", "verb.stative",
    "verb.weather", "adj.ppl")
# morphy's detachment rules: (ending, replacement) for each part of speech (morphy(7WN)).
SUFFIXES = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
_EXAMPLE_START = re.compile(r';\s*(?=")')  # an example follows the definition: ; "...
_MARKER = re.compile(r"\([a-z]+\)$")  # an adjective's syntactic marker: galore(ip)


@dataclass(frozen=True)
class Synset:
    offset: int
    pos: str  # n, v, a, s, r
    lexname: str
    lemmas: tuple[str, ...]  # lower case, "_" between the words of a collocation
    definition: str
    examples: tuple[str, ...]


def parse_gloss(gloss: str) -> tuple[str, tuple[str, ...]]:
    """(definition, examples) of a gloss: what precedes the first `; "`, and the text in
    the first pair of quotes of every part after it (an attribution after it is dropped)."""
    parts = _EXAMPLE_START.split(gloss.strip())
    examples = []
    for part in parts[1:]:
        quoted = re.match(r'"([^"]*)"', part)
        if quoted and quoted[1].strip():
            examples.append(" ".join(quoted[1].split()))
    return " ".join(parts[0].strip().rstrip(";").split()), tuple(examples)


def read_synsets(directory: Path = WORDNET_DIR) -> list[Synset]:
    """Every synset of `data.noun`, `data.verb`, `data.adj`, `data.adv`, in that order."""
    synsets = []
    for suffix in PARTS_OF_SPEECH:
        for line in (directory / f"data.{suffix}").read_text().splitlines():
            if line.startswith("  "):  # the licence at the top of the file
                continue
            fields, _, gloss = line.partition(" | ")
            offset, lexfile, pos, count, *rest = fields.split()
            words = rest[: 2 * int(count, 16): 2]
            lemmas = tuple(dict.fromkeys(_MARKER.sub("", w).lower() for w in words))
            definition, examples = parse_gloss(gloss)
            synsets.append(Synset(int(offset), pos, LEXNAMES[int(lexfile)], lemmas,
                                  definition, examples))
    return synsets


def read_index(directory: Path = WORDNET_DIR) -> dict[tuple[str, str], list[int]]:
    """{(lemma, pos letter n/v/a/r): its synsets' offsets, WordNet's first sense first}."""
    senses = {}
    for suffix, letter in PARTS_OF_SPEECH.items():
        for line in (directory / f"index.{suffix}").read_text().splitlines():
            if line.startswith("  "):
                continue
            fields = line.split()
            lemma, synset_count, pointer_count = fields[0], int(fields[2]), int(fields[3])
            offsets = fields[4 + pointer_count + 2:]
            assert len(offsets) == synset_count, line
            senses[lemma, letter] = [int(offset) for offset in offsets]
    return senses


def read_exceptions(directory: Path = WORDNET_DIR) -> dict[str, dict[str, tuple[str, ...]]]:
    """{pos letter: {inflected form: its base forms}} from the `*.exc` files."""
    found = {}
    for suffix, letter in PARTS_OF_SPEECH.items():
        found[letter] = {}
        for line in (directory / f"{suffix}.exc").read_text().splitlines():
            form, *bases = line.split()
            found[letter][form] = tuple(bases)
    return found


def base_forms(word: str, letter: str, exceptions: dict[str, dict[str, tuple[str, ...]]]
               ) -> set[str]:
    """The word itself, its exceptions' base forms and what the suffix rules make of it."""
    forms = {word, *exceptions[letter].get(word, ())}
    for ending, replacement in SUFFIXES[letter]:
        if word.endswith(ending) and len(word) > len(ending):
            forms.add(word[: -len(ending)] + replacement)
    return forms


def synset_names(synsets: list[Synset], index: dict[tuple[str, str], list[int]]
                 ) -> dict[tuple[int, str], str]:
    """{(offset, pos letter n/v/a/r): NLTK's name}: the first lemma, the pos, the synset's
    sense number for that lemma."""
    names = {}
    for synset in synsets:
        letter = "a" if synset.pos == "s" else synset.pos
        rank = index[synset.lemmas[0], letter].index(synset.offset) + 1
        names[synset.offset, letter] = f"{synset.lemmas[0]}.{synset.pos}.{rank:02d}"
    return names


def extract(directory: Path = WORDNET_DIR) -> dict[str, bytes]:
    """{file name: its uncompressed bytes} of both files."""
    tokenize = reference().corpus.tokenize
    synsets, index = read_synsets(directory), read_index(directory)
    exceptions, names = read_exceptions(directory), synset_names(synsets, index)
    by_key = {(s.offset, "a" if s.pos == "s" else s.pos): s for s in synsets}
    glosses = ["synset\tdefinition"]
    examples = ["\t".join(EXAMPLE_COLUMNS)]
    for synset in synsets:
        letter = "a" if synset.pos == "s" else synset.pos
        glosses.append(f"{names[synset.offset, letter]}\t{synset.definition}")
        single = [lemma for lemma in synset.lemmas if tokenize(lemma) == [lemma]]
        for sentence in synset.examples:
            words = tokenize(sentence)
            forms = [base_forms(word, letter, exceptions) for word in words]
            found = next(((position, words[position], lemma) for lemma in single
                          for position in range(len(words)) if lemma in forms[position]),
                         None)
            if found is None:
                continue
            position, word, lemma = found
            senses = index[lemma, letter]
            first = by_key[senses[0], letter]
            examples.append("\t".join(map(str, (
                names[synset.offset, letter], lemma, POS_NAMES[synset.pos], synset.lexname,
                senses.index(synset.offset) + 1, names[first.offset, letter], first.lexname,
                position, word, sentence))))
    return {"glosses.tsv.gz": "\n".join(glosses).encode() + b"\n",
            "examples.tsv.gz": "\n".join(examples).encode() + b"\n",
            "LICENSE": licence(directory).encode()}


def licence(directory: Path = WORDNET_DIR) -> str:
    """WordNet's licence, as the head of every one of its data files states it."""
    lines = []
    for line in (directory / "data.noun").read_text().splitlines():
        if not line.startswith("  "):
            break
        lines.append(re.sub(r"^\s+\d+ ?", "", line).rstrip())
    return "\n".join(lines).strip() + "\n"


def stored(name: str, data: bytes) -> bytes:
    """What the repository holds of a file: gzip for the tables, the licence as it is."""
    return compress(data) if name.endswith(".gz") else data


def compress(data: bytes) -> bytes:
    """gzip at level 9 with no file name and time 0 in its header: the same bytes always."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=buffer,
                       mtime=0) as f:
        f.write(data)
    return buffer.getvalue()


def installed(directory: Path = WORDNET_DIR) -> bool:
    return all((directory / f"{kind}.{suffix}").exists() for kind in ("data", "index")
               for suffix in PARTS_OF_SPEECH)


def check(directory: Path = WORDNET_DIR, out: Path = OUT) -> list[str]:
    """What differs between the committed files and what `directory` gives; [] when every
    file is reproduced byte for byte."""
    problems = []
    for name, data in extract(directory).items():
        committed = out / name
        if not committed.exists():
            problems.append(f"{shown(committed)} is missing: run `python -m tools.wordnet`")
        elif stored(name, data) != committed.read_bytes():
            same = name.endswith(".gz") and gzip.decompress(committed.read_bytes()) == data
            problems.append(
                f"{shown(committed)} differs from what {directory} gives" + (
                    f": its content is the same, only the compression differs (zlib "
                    f"{zlib.ZLIB_RUNTIME_VERSION} here)" if same else
                    ": run `python -m tools.wordnet` and commit the result"))
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.wordnet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="compare the committed files with what WordNet gives")
    parser.add_argument("--wordnet", type=Path, default=WORDNET_DIR,
                        help=f"WordNet 3.0's dict folder (default {WORDNET_DIR})")
    args = parser.parse_args(argv)
    if not installed(args.wordnet):
        print(f"WordNet 3.0 is not installed at {args.wordnet} (Debian: apt-get install "
              f"wordnet-base; elsewhere set $WORDNET_DIR): "
              + ("check skipped" if args.check else "nothing written"))
        return 0 if args.check else 1
    if args.check:
        problems = check(args.wordnet)
        print("\n".join(problems) or f"{', '.join(FILES)}: reproduced byte for byte from "
                                     f"{args.wordnet}")
        return 1 if problems else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in extract(args.wordnet).items():
        (OUT / name).write_bytes(stored(name, data))
        lines = data.count(b"\n")
        print(f"{shown(OUT / name)}: {lines} lines, {len(stored(name, data)) / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
