// Device code of the array ops on CUDA (none yet).
