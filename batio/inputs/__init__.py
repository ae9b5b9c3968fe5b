"""The inputs of a run: its platform, its workloads, their contention curves and the run specification."""
