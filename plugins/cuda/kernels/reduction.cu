// Device code of Reductions on CUDA (none yet).
