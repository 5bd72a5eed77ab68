"""What `make replicate` shows of the reference implementation beside your biLMs: each
target's reading over the reference's seeds, trained against untrained. Numbers only, written
from the course's measured results; do not edit.
"""

SUMMARY = {"seeds": 10, "targets": {
    "training: pooled gap >= 0.1 at layer 1":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.144 ± 0.009", "verdict": "pre-training",
         "values": {
          "trained": [0.237, 0.208, 0.235, 0.213, 0.205, 0.206, 0.2, 0.214, 0.218, 0.197],
          "untrained": [0.083, 0.068, 0.094, 0.07, 0.057, 0.08, 0.064, 0.056, 0.068, 0.055],
          "effect": [0.154, 0.14, 0.141, 0.144, 0.148, 0.127, 0.136, 0.158, 0.15, 0.141],
         }},
    "training: pooled gap >= 0.1 at layer 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.198 ± 0.010", "verdict": "pre-training",
         "values": {
          "trained": [0.283, 0.246, 0.304, 0.256, 0.262, 0.277, 0.256, 0.261, 0.257, 0.261],
          "untrained": [0.078, 0.066, 0.092, 0.071, 0.056, 0.079, 0.064, 0.059, 0.064, 0.054],
          "effect": [0.206, 0.18, 0.212, 0.185, 0.206, 0.198, 0.192, 0.203, 0.193, 0.207],
         }},
    "held-out: pooled gap >= 0.1 at layer 1":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.157 ± 0.009", "verdict": "pre-training",
         "values": {
          "trained": [0.212, 0.185, 0.209, 0.19, 0.181, 0.183, 0.177, 0.19, 0.194, 0.173],
          "untrained": [0.042, 0.032, 0.056, 0.031, 0.022, 0.038, 0.03, 0.022, 0.03, 0.023],
          "effect": [0.17, 0.152, 0.153, 0.159, 0.159, 0.145, 0.147, 0.168, 0.164, 0.149],
         }},
    "held-out: pooled gap >= 0.1 at layer 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.216 ± 0.010", "verdict": "pre-training",
         "values": {
          "trained": [0.264, 0.228, 0.284, 0.238, 0.245, 0.259, 0.238, 0.242, 0.238, 0.242],
          "untrained": [0.038, 0.03, 0.054, 0.032, 0.022, 0.038, 0.029, 0.023, 0.028, 0.023],
          "effect": [0.227, 0.198, 0.23, 0.206, 0.223, 0.221, 0.208, 0.218, 0.211, 0.219],
         }},
    "training: every word's gap >= 0.1 at layers 1 and 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "5/10",
         "effect_mean_sd": "0.097 ± 0.017", "verdict": "unclear",
         "values": {
          "trained": [0.201, 0.139, 0.155, 0.171, 0.155, 0.15, 0.174, 0.127, 0.144, 0.159],
          "untrained": [0.058, 0.049, 0.064, 0.054, 0.041, 0.055, 0.047, 0.037, 0.052, 0.033],
          "effect": [0.124, 0.083, 0.089, 0.104, 0.102, 0.066, 0.116, 0.089, 0.09, 0.108],
         }},
    "held-out: every word's gap >= 0.1 at layers 1 and 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "5/10",
         "effect_mean_sd": "0.107 ± 0.020", "verdict": "unclear",
         "values": {
          "trained": [0.173, 0.12, 0.139, 0.156, 0.14, 0.138, 0.157, 0.115, 0.128, 0.145],
          "untrained": [0.011, 0.019, 0.027, 0.014, -0.004, 0.003, 0.007, -0.004, 0.021, -0.003],
          "effect": [0.14, 0.084, 0.096, 0.124, 0.107, 0.081, 0.131, 0.097, 0.098, 0.116],
         }},
    "training: pooled gap larger at layer 2 than at layer 1":
        {"trained": "10/10", "untrained": "3/10", "effect": "10/10",
         "effect_mean_sd": "0.054 ± 0.012", "verdict": "pre-training",
         "values": {
          "trained": [0.046, 0.039, 0.069, 0.043, 0.057, 0.07, 0.056, 0.047, 0.039, 0.064],
          "untrained": [-0.006, -0.002, -0.002, 0.001, -0.001, -0.0, 0.001, 0.002, -0.003, -0.001],
          "effect": [0.052, 0.04, 0.071, 0.042, 0.058, 0.071, 0.056, 0.045, 0.043, 0.065],
         }},
    "held-out: pooled gap larger at layer 2 than at layer 1":
        {"trained": "10/10", "untrained": "3/10", "effect": "10/10",
         "effect_mean_sd": "0.059 ± 0.012", "verdict": "pre-training",
         "values": {
          "trained": [0.053, 0.044, 0.075, 0.047, 0.064, 0.077, 0.061, 0.052, 0.044, 0.069],
          "untrained": [-0.004, -0.002, -0.002, 0.001, -0.0, 0.0, -0.0, 0.001, -0.003, -0.001],
          "effect": [0.057, 0.045, 0.077, 0.046, 0.064, 0.076, 0.061, 0.05, 0.046, 0.069],
         }},
    "held-out: the nearest occurrence has the word's sense at layer 1 (1-NN accuracy >= 0.9)":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.237 ± 0.072", "verdict": "pre-training",
         "values": {
          "trained": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
          "untrained": [0.719, 0.844, 0.812, 0.781, 0.719, 0.812, 0.688, 0.656, 0.875, 0.719],
          "effect": [0.281, 0.156, 0.188, 0.219, 0.281, 0.188, 0.312, 0.344, 0.125, 0.281],
         }},
    "held-out: the nearest occurrence has the word's sense at layer 2 (1-NN accuracy >= 0.9)":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.256 ± 0.064", "verdict": "pre-training",
         "values": {
          "trained": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
          "untrained": [0.688, 0.812, 0.75, 0.75, 0.75, 0.812, 0.656, 0.688, 0.844, 0.688],
          "effect": [0.312, 0.188, 0.25, 0.25, 0.25, 0.188, 0.344, 0.312, 0.156, 0.312],
         }},
    "word sense: the mix finds the sense (accuracy >= 0.9)":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.347 ± 0.088", "verdict": "pre-training",
         "values": {
          "trained": [0.992, 1.0, 1.0, 1.0, 0.992, 1.0, 0.992, 0.992, 1.0, 1.0],
          "untrained": [0.773, 0.664, 0.711, 0.688, 0.57, 0.703, 0.648, 0.445, 0.625, 0.672],
          "effect": [0.219, 0.336, 0.289, 0.312, 0.422, 0.297, 0.344, 0.547, 0.375, 0.328],
         }},
    "word sense: learned weights put the least on layer 0":
        {"trained": "10/10", "untrained": "10/10", "effect": "1/10",
         "effect_mean_sd": "-0.080 ± 0.053", "verdict": "the architecture",
         "values": {
          "trained": [0.11, 0.172, 0.043, 0.197, 0.231, 0.124, 0.177, 0.216, 0.203, 0.165],
          "untrained": [0.192, 0.263, 0.228, 0.239, 0.295, 0.26, 0.231, 0.209, 0.262, 0.262],
          "effect": [-0.082, -0.091, -0.185, -0.042, -0.064, -0.136, -0.054, 0.007, -0.059, -0.097],
         }},
    "word sense: learned weights prefer layer 2":
        {"trained": "8/10", "untrained": "4/10", "effect": "8/10",
         "effect_mean_sd": "0.057 ± 0.062", "verdict": "pre-training",
         "values": {
          "trained": [0.04, 0.072, 0.058, -0.045, 0.077, 0.167, 0.057, 0.028, 0.063, -0.018],
          "untrained": [-0.024, -0.028, -0.006, -0.018, 0.008, -0.019, 0.03, 0.011, -0.021, 0.002],
          "effect": [0.064, 0.1, 0.065, -0.027, 0.069, 0.186, 0.027, 0.017, 0.084, -0.02],
         }},
    "word sense: single-layer probes prefer layer 2":
        {"trained": "8/10", "untrained": "6/10", "effect": "4/10",
         "effect_mean_sd": "0.008 ± 0.045", "verdict": "unclear",
         "values": {
          "trained": [-0.008, 0.0, 0.016, 0.031, 0.016, 0.016, 0.016, 0.016, 0.008, 0.023],
          "untrained": [-0.07, -0.039, 0.055, 0.0, 0.016, 0.07, 0.039, -0.07, 0.023, 0.031],
          "effect": [0.062, 0.039, -0.039, 0.031, 0.0, -0.055, -0.023, 0.086, -0.016, -0.008],
         }},
    "word class: the mix beats chance by >= 0.1":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.294 ± 0.089", "verdict": "pre-training",
         "values": {
          "trained": [0.39, 0.222, 0.278, 0.288, 0.272, 0.238, 0.112, 0.123, 0.396, 0.121],
          "untrained": [-0.071, -0.052, -0.063, -0.044, -0.005, -0.029, -0.078, -0.049, 0.008,
                        -0.117],
          "effect": [0.461, 0.273, 0.341, 0.332, 0.277, 0.267, 0.189, 0.172, 0.388, 0.238],
         }},
    "word class: learned weights prefer a lower layer (0 or 1)":
        {"trained": "10/10", "untrained": "10/10", "effect": "3/10",
         "effect_mean_sd": "-0.030 ± 0.078", "verdict": "the architecture",
         "values": {
          "trained": [0.327, 0.214, 0.205, 0.176, 0.187, 0.176, 0.265, 0.181, 0.229, 0.214],
          "untrained": [0.185, 0.24, 0.21, 0.248, 0.284, 0.261, 0.229, 0.273, 0.332, 0.211],
          "effect": [0.141, -0.027, -0.005, -0.071, -0.097, -0.085, 0.037, -0.092, -0.103, 0.003],
         }},
    "word class: single-layer probes prefer a lower layer (0 or 1)":
        {"trained": "3/10", "untrained": "5/10", "effect": "3/10",
         "effect_mean_sd": "-0.045 ± 0.067", "verdict": "missed",
         "values": {
          "trained": [-0.026, 0.015, -0.07, -0.07, 0.003, -0.021, -0.047, -0.026, 0.003, -0.016],
          "untrained": [0.011, -0.002, 0.129, -0.005, 0.11, 0.013, -0.005, -0.018, 0.002, -0.04],
          "effect": [-0.037, 0.016, -0.199, -0.065, -0.107, -0.034, -0.042, -0.008, 0.002, 0.024],
         }},
    "character biLM, held-out: pooled gap >= 0.1 at layer 1":
        {"trained": "9/10", "untrained": "0/10", "effect": "9/10",
         "effect_mean_sd": "0.119 ± 0.022", "verdict": "pre-training",
         "values": {
          "trained": [0.138, 0.075, 0.141, 0.142, 0.138, 0.12, 0.105, 0.107, 0.138, 0.107],
          "untrained": [0.002, 0.002, 0.002, 0.002, 0.002, 0.002, 0.002, 0.002, 0.003, 0.001],
          "effect": [0.136, 0.074, 0.14, 0.14, 0.136, 0.118, 0.103, 0.105, 0.135, 0.106],
         }},
    "character biLM, held-out: pooled gap >= 0.1 at layer 2":
        {"trained": "10/10", "untrained": "0/10", "effect": "10/10",
         "effect_mean_sd": "0.184 ± 0.015", "verdict": "pre-training",
         "values": {
          "trained": [0.195, 0.159, 0.192, 0.202, 0.192, 0.197, 0.17, 0.198, 0.185, 0.168],
          "untrained": [0.002, 0.002, 0.002, 0.002, 0.002, 0.002, 0.001, 0.002, 0.003, 0.001],
          "effect": [0.193, 0.157, 0.191, 0.201, 0.19, 0.196, 0.168, 0.197, 0.182, 0.167],
         }},
    "character biLM: its layer-0 word-class probe beats the word biLM's":
        {"trained": "8/10", "untrained": "8/10", "effect": "4/10",
         "effect_mean_sd": "-0.040 ± 0.120", "verdict": "the architecture",
         "values": {
          "trained": [0.175, -0.083, 0.136, 0.058, -0.019, 0.112, 0.238, 0.18, 0.184, 0.204],
          "untrained": [0.194, 0.15, -0.01, 0.194, -0.015, 0.102, 0.218, 0.398, 0.199, 0.15],
          "effect": [-0.019, -0.233, 0.146, -0.136, -0.005, 0.01, 0.019, -0.218, -0.015, 0.053],
         }},
    "words the corpus lacks: the character biLM ranks their relatives nearer than the word biLM":
        {"trained": "10/10", "untrained": "10/10", "effect": "5/10",
         "effect_mean_sd": "-1.486 ± 7.714", "verdict": "the architecture",
         "values": {
          "trained": [39.0, 39.0, 60.571, 60.5, 74.357, 48.286, 64.214, 63.643, 62.857, 60.5],
          "untrained": [52.214, 48.429, 52.714, 56.786, 70.714, 53.571, 56.714, 66.071, 59.786,
                        70.786],
          "effect": [-13.214, -9.429, 7.857, 3.714, 3.643, -5.286, 7.5, -2.429, 3.071, -10.286],
         }},
}}

# What `make test` sets beside a passed section's own numbers (`analyses.targets.key_means`).
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
  },
  "noise": {
   "gap": [0.0, 0.009, 0.01],
   "weights": {
    "word_class": [0.038, 0.045, 0.023],
    "word_sense": [0.031, 0.037, 0.032]
   },
   "mix_accuracy": {
    "word_class": 0.089,
    "word_sense": 0.088
   },
   "mean_rank": 7.398
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
  },
  "noise": {
   "gap": [0.0, 0.022, 0.015],
   "weights": {
    "word_class": [0.032, 0.036, 0.031],
    "word_sense": [0.027, 0.051, 0.059]
   },
   "mix_accuracy": {
    "word_class": 0.069,
    "word_sense": 0.041
   },
   "mean_rank": 2.143
  }
 }
}
