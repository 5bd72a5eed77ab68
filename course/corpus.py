"""The toy corpus of the course: the data every section reads, given, not written by the learner.

A corpus in which context decides the sense. Polysemous words, each in two senses:

    bank   finance | river        play   verb | theatre
    right  direction | correct    watch  verb | timepiece

For every sense, openings and endings are written by hand (`SENSE_PHRASES`), and any
opening, the word and any ending of the same sense make a sentence:

    she put her money in the | bank | to keep it safe       finance
    we walked along the      | bank | by the water          river

Of a sense's sentences, opening k with ending k is held out (`HELDOUT`) and every other
pair is for training (`CORPUS`): a held-out sentence joins an opening and an ending that
training saw, but never together, and has no word that training lacks. Notebook 2 counts
them.

Why it is larger than the seed's ~30 sentences of ~50-80 words: on so few sentences a
biLM learns *which sentence* it reads, and its states then tell sentences apart rather than
senses (same-sense pairs were 0.02 more similar than different-sense ones). Here every
opening goes with every ending of its sense, so what follows "bank" can only be predicted
from its sense, and the biLM must carry the sense in its states; it still trains in seconds.

`SENSE_LABELS` and `HELDOUT_LABELS` record, for each sentence, its target word and sense,
for sections 6 and 7 to compare and probe the word's embeddings. Section 7's word-class
task uses the other words of the same sentences (`WORD_CLASSES`), and section 8 looks for
the relatives of words the corpus lacks (`UNSEEN_RELATIVES`).

Section 2 (`s2_corpus`) re-exports the sentences and their labels, so that `corpus.CORPUS`
is the corpus wherever a section's module is at hand.
"""

from __future__ import annotations

__all__ = [
    "CORPUS",
    "HELDOUT",
    "HELDOUT_LABELS",
    "PHRASES_OF",
    "SENSE_LABELS",
    "SENSE_PHRASES",
    "UNSEEN_RELATIVES",
    "WORD_CLASSES",
]

# (target word, sense): (openings, endings). Every opening leads up to the word in that
# sense and every ending follows from it, so any opening goes with any ending of its sense.
SENSE_PHRASES: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("bank", "finance"): (
        ("she put her money in the", "he keeps his gold at the", "they took their cash to the",
         "we paid the money into the"),
        ("to keep it safe", "before it closed", "to pay the loan", "to save money")),
    ("bank", "river"): (
        ("they sat on the", "we walked along the", "the boat hit the", "the ducks swim near the"),
        ("of the river", "by the water", "under the trees", "where the fish swim")),
    ("play", "verb"): (
        ("the children like to", "we often", "after school they", "at night i"),
        ("football in the park", "with friends", "games all day", "music together")),
    ("play", "theatre"): (
        ("we saw a new", "she wrote a", "they got tickets for the", "the actors love the"),
        ("at the theatre", "about love", "on the stage", "for the school")),
    ("right", "direction"): (
        ("turn", "go", "the shop is on the", "look to the"),
        ("at the corner", "after the bridge", "past the school", "at the next street")),
    ("right", "correct"): (
        ("your answer is", "she was", "the teacher said he was", "i think you are"),
        ("about the test", "and they were wrong", "this time", "again")),
    ("watch", "verb"): (
        ("we sit down to", "they like to", "every day i", "the children"),
        ("the football games", "the birds in the park", "a film on television",
         "the stars at night")),
    ("watch", "timepiece"): (
        ("he wore a gold", "she gave him a", "i got a new", "she got him a"),
        ("on his wrist", "as a gift", "with a gold strap", "from the shop")),
}

# (sentence, target word, sense), sense by sense, opening by opening, ending by ending:
# opening k with ending k is held out, every other pair is for training.
SENSE_LABELS: tuple[tuple[str, str, str], ...] = tuple(
    (f"{opening} {word} {ending}", word, sense)
    for (word, sense), (openings, endings) in SENSE_PHRASES.items()
    for k, opening in enumerate(openings) for j, ending in enumerate(endings) if k != j)
HELDOUT_LABELS: tuple[tuple[str, str, str], ...] = tuple(
    (f"{opening} {word} {ending}", word, sense)
    for (word, sense), (openings, endings) in SENSE_PHRASES.items()
    for opening, ending in zip(openings, endings, strict=True))

CORPUS: tuple[str, ...] = tuple(sentence for sentence, _, _ in SENSE_LABELS)
HELDOUT: tuple[str, ...] = tuple(sentence for sentence, _, _ in HELDOUT_LABELS)

# sentence: (k, j), the indices of its opening and its ending among its sense's phrases.
PHRASES_OF: dict[str, tuple[int, int]] = {
    f"{opening} {word} {ending}": (k, j)
    for (word, _), (openings, endings) in SENSE_PHRASES.items()
    for k, opening in enumerate(openings) for j, ending in enumerate(endings)}

# The word class of every corpus word that has only one (section 7's word-class task). Left
# out: the four polysemous target words; "love", "to" and "gold", whose class depends on the
# sentence (the noun in "about love", the verb in "the actors love the play"); "and",
# "before" and "where", the only words of their classes.
WORD_CLASSES: dict[str, tuple[str, ...]] = {
    "determiner": ("a", "all", "every", "her", "his", "the", "their", "this", "your"),
    "pronoun": ("he", "him", "i", "it", "she", "they", "we", "you"),
    "noun": ("actors", "answer", "birds", "boat", "bridge", "cash", "children", "corner",
             "day", "ducks", "film", "fish", "football", "friends", "games", "gift", "loan",
             "money", "music", "night", "park", "river", "school", "shop", "stage", "stars",
             "strap", "street", "teacher", "television", "test", "theatre", "tickets",
             "time", "trees", "water", "wrist"),
    "verb": ("are", "closed", "gave", "go", "got", "hit", "is", "keep", "keeps", "like",
             "look", "paid", "pay", "put", "said", "sat", "save", "saw", "sit", "swim",
             "think", "took", "turn", "walked", "was", "were", "wore", "wrote"),
    "adjective": ("new", "next", "safe", "wrong"),
    "adverb": ("again", "down", "often", "together"),
    "preposition": ("about", "after", "along", "as", "at", "by", "for", "from", "in", "into",
                    "near", "of", "on", "past", "under", "with"),
}

# (a word the corpus lacks, its relative in the corpus): inflections, a compound, a spelling
# variant and typos, each of a word of the vocabulary (section 8).
UNSEEN_RELATIVES: tuple[tuple[str, str], ...] = (
    ("banks", "bank"), ("rivers", "river"), ("plays", "play"), ("played", "play"),
    ("watches", "watch"), ("theatres", "theatre"), ("schools", "school"),
    ("teachers", "teacher"), ("bird", "birds"), ("game", "games"), ("riverbank", "river"),
    ("theater", "theatre"), ("bnak", "bank"), ("wacth", "watch"))
