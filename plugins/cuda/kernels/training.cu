// Device code of the optimizer updates on CUDA (none yet).
