/* Inline wrappers taking an ovstage_instance_t*. */
#include "ovstage_api_utils.h"
