/* The rest of the library's flat API. */
#include "ovstage_instancing.h"
#include "ovstage_population.h"
