/* The DLPack types under their usual include path. */
#include <ovx/dlpack/dlpack.h>
