// Device code of Softmax, cross entropy and BiasAddGrad on CUDA (none yet).
