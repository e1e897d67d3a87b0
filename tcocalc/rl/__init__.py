"""The RL pipeline model, the split solver and the simulator."""
