"""What `make replicate` shows of the reference implementation beside your biLMs: each
target's reading over the reference's seeds, trained against untrained. Numbers only, written
from the course's measured results; do not edit.
"""

SUMMARY = {"seeds": 10, "targets": {
    "training: pooled gap >= 0.1 at layer 1":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.144 ± 0.009", "verdict": "pre-training"},
    "training: pooled gap >= 0.1 at layer 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.198 ± 0.010", "verdict": "pre-training"},
    "held-out: pooled gap >= 0.1 at layer 1":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.157 ± 0.009", "verdict": "pre-training"},
    "held-out: pooled gap >= 0.1 at layer 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.216 ± 0.010", "verdict": "pre-training"},
    "training: every word's gap >= 0.1 at layers 1 and 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "5/10", "needed": 9,
         "effect_mean_sd": "0.097 ± 0.017", "verdict": "unclear"},
    "held-out: every word's gap >= 0.1 at layers 1 and 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "5/10", "needed": 9,
         "effect_mean_sd": "0.107 ± 0.020", "verdict": "unclear"},
    "training: pooled gap larger at layer 2 than at layer 1":
        {"trained": "10/10", "untrained": "3/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.054 ± 0.012", "verdict": "pre-training"},
    "held-out: pooled gap larger at layer 2 than at layer 1":
        {"trained": "10/10", "untrained": "3/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.059 ± 0.012", "verdict": "pre-training"},
    "held-out: the nearest occurrence has the word's sense at layer 1 (1-NN accuracy >= 0.9)":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.237 ± 0.072", "verdict": "pre-training"},
    "held-out: the nearest occurrence has the word's sense at layer 2 (1-NN accuracy >= 0.9)":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.256 ± 0.064", "verdict": "pre-training"},
    "word sense: the mix finds the sense (accuracy >= 0.9)":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 8,
         "effect_mean_sd": "0.347 ± 0.088", "verdict": "pre-training"},
    "word sense: learned weights put the least on layer 0":
        {"trained": "10/10", "untrained": "10/10", "effect": "1/10", "needed": 8,
         "effect_mean_sd": "-0.080 ± 0.053", "verdict": "the architecture"},
    "word sense: learned weights prefer layer 2":
        {"trained": "8/10", "untrained": "4/10", "effect": "8/10", "needed": 8,
         "effect_mean_sd": "0.057 ± 0.062", "verdict": "pre-training"},
    "word sense: single-layer probes prefer layer 2":
        {"trained": "8/10", "untrained": "6/10", "effect": "4/10", "needed": 8,
         "effect_mean_sd": "0.008 ± 0.045", "verdict": "unclear"},
    "word class: the mix beats chance by >= 0.1":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 8,
         "effect_mean_sd": "0.294 ± 0.089", "verdict": "pre-training"},
    "word class: learned weights prefer a lower layer (0 or 1)":
        {"trained": "10/10", "untrained": "10/10", "effect": "3/10", "needed": 8,
         "effect_mean_sd": "-0.030 ± 0.078", "verdict": "the architecture"},
    "word class: single-layer probes prefer a lower layer (0 or 1)":
        {"trained": "3/10", "untrained": "5/10", "effect": "3/10", "needed": 8,
         "effect_mean_sd": "-0.045 ± 0.067", "verdict": "missed"},
    "character biLM, held-out: pooled gap >= 0.1 at layer 1":
        {"trained": "9/10", "untrained": "0/10", "effect": "9/10", "needed": 9,
         "effect_mean_sd": "0.119 ± 0.022", "verdict": "pre-training"},
    "character biLM, held-out: pooled gap >= 0.1 at layer 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10", "needed": 9,
         "effect_mean_sd": "0.184 ± 0.015", "verdict": "pre-training"},
    "character biLM: its layer-0 word-class probe beats the word biLM's":
        {"trained": "8/10", "untrained": "8/10", "effect": "4/10", "needed": 8,
         "effect_mean_sd": "-0.040 ± 0.120", "verdict": "the architecture"},
    "words the corpus lacks: the character biLM ranks their relatives nearer than the word biLM":
        {"trained": "10/10", "untrained": "10/10", "effect": "5/10", "needed": 9,
         "effect_mean_sd": "-1.486 ± 7.714", "verdict": "the architecture"},
}}

# What `make test` sets beside a passed section's own numbers (`course.targets.key_means`).
NUMBERS = {
 "word": {
  "trained": {
   "gap": [0.0, 0.189, 0.248],
   "nearest": [0.333, 1.0, 1.0],
   "weights": {
    "word_class": [0.389, 0.406, 0.206],
    "word_sense": [0.203, 0.373, 0.423]
   },
   "mix_accuracy": {
    "word_class": 0.516,
    "word_sense": 0.997
   },
   "mean_rank": 65.543,
   "train_loss": 1.106
  },
  "untrained": {
   "gap": [0.0, 0.033, 0.032],
   "nearest": [0.333, 0.762, 0.744],
   "weights": {
    "word_class": [0.489, 0.269, 0.242],
    "word_sense": [0.165, 0.421, 0.414]
   },
   "mix_accuracy": {
    "word_class": 0.222,
    "word_sense": 0.65
   },
   "mean_rank": 62.907
  }
 },
 "char": {
  "trained": {
   "gap": [0.0, 0.121, 0.186],
   "nearest": [0.333, 0.997, 1.0],
   "weights": {
    "word_class": [0.334, 0.387, 0.279],
    "word_sense": [0.164, 0.336, 0.5]
   },
   "mix_accuracy": {
    "word_class": 0.606,
    "word_sense": 0.988
   },
   "mean_rank": 8.25,
   "train_loss": 1.104
  },
  "untrained": {
   "gap": [0.0, 0.002, 0.002],
   "nearest": [0.333, 0.669, 0.672],
   "weights": {
    "word_class": [0.603, 0.201, 0.196],
    "word_sense": [0.301, 0.379, 0.32]
   },
   "mix_accuracy": {
    "word_class": 0.394,
    "word_sense": 0.589
   },
   "mean_rank": 4.129
  }
 }
}
