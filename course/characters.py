"""The character vocabulary of section 8's character CNN: given constants, one home.

A token is MAX_CHARS character ids: BEGIN_OF_WORD, the UTF-8 bytes of the word (byte b as
FIRST_BYTE + b), END_OF_WORD, then CHAR_PAD. The sentence boundaries <s> and </s> are one
marker each, BEGIN_OF_SENTENCE or END_OF_SENTENCE, between BOW and EOW.

Sizes against the paper's (bilm-tf's options of the released model, AllenNLP's
`_ElmoCharacterEncoder`):

    the paper                                      here
    262 character ids: 256 bytes, BOW, EOW,        261: padding 0, BOW 1, EOW 2, the
        padding, begin and end of sentence             sentence markers 3 and 4, byte b: 5 + b
    50 characters per token                        MAX_CHARS = 16 (longer words are cut)
    character embedding 16                         16
    filters (width: count) 1:32 2:32 3:64 4:128    1:4 2:8 3:16 4:16 5:32 6:32 7:64: the
        5:256 6:512 7:1024, 2048 in all                paper's widths, 172 filters in all
    2 highway layers, projection to 512            2 highway layers, projection to 256

Section 8's module re-exports every name, so `char_encoder.MAX_CHARS` and the rest read
as before in the notebook and the demo.
"""

from __future__ import annotations

__all__ = [
    "BEGIN_OF_SENTENCE",
    "BEGIN_OF_WORD",
    "CHAR_PAD",
    "CHAR_VOCAB_SIZE",
    "END_OF_SENTENCE",
    "END_OF_WORD",
    "FILTERS",
    "FIRST_BYTE",
    "MAX_CHARS",
]

MAX_CHARS = 16
CHAR_PAD, BEGIN_OF_WORD, END_OF_WORD, BEGIN_OF_SENTENCE, END_OF_SENTENCE = 0, 1, 2, 3, 4
FIRST_BYTE = 5  # byte b of a word's UTF-8 is character id FIRST_BYTE + b
CHAR_VOCAB_SIZE = FIRST_BYTE + 256
# (width, number of filters): the paper's widths 1-7, with 172 filters where it has 2048.
FILTERS: tuple[tuple[int, int], ...] = ((1, 4), (2, 8), (3, 16), (4, 16), (5, 32), (6, 32),
                                        (7, 64))
