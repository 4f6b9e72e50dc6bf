// ScopedFlushDenormal: while alive, the calling thread's floating-point unit flushes denormal
// results to zero and reads denormal inputs as zero (x86's MXCSR FTZ and DAZ bits); the previous
// mode comes back when it ends. The executor runs every kernel under it, as TensorFlow's does:
// arithmetic that drifts into the denormal range (an optimizer's second moments, tiny
// gradients) otherwise runs tens of times slower on x86 and gives numbers TensorFlow does not.
// Elsewhere than x86-64 it does nothing.
#ifndef CONFLUX_CORE_SRC_RUNTIME_FLUSH_DENORMAL_H_
#define CONFLUX_CORE_SRC_RUNTIME_FLUSH_DENORMAL_H_

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

namespace cfx {

class ScopedFlushDenormal {
 public:
#if defined(__x86_64__) || defined(_M_X64)
  static constexpr unsigned kFlushToZero = 0x8000;       // MXCSR.FTZ
  static constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ
  ScopedFlushDenormal() : saved_(_mm_getcsr()) {
    const unsigned want = saved_ | kFlushToZero | kDenormalsAreZero;
    if (want != saved_) _mm_setcsr(want);
  }
  ~ScopedFlushDenormal() {
    if (_mm_getcsr() != saved_) _mm_setcsr(saved_);
  }

 private:
  unsigned saved_;
#else
  ScopedFlushDenormal() = default;
#endif
  ScopedFlushDenormal(const ScopedFlushDenormal&) = delete;
  ScopedFlushDenormal& operator=(const ScopedFlushDenormal&) = delete;
};

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_RUNTIME_FLUSH_DENORMAL_H_
