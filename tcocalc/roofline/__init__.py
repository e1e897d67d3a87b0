"""The roofline engine: one serving instance or one training job; knows nothing of RL."""
