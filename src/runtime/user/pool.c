/* The default pool (libkprewrite-pool.a), pulled in by -u __kprewrite_pool. */
#include "kprewrite/pool.h"

KPREWRITE_POOL(KPREWRITE_POOL_TEXT, KPREWRITE_POOL_TABLE, KPREWRITE_POOL_DATA)
