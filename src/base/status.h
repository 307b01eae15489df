// Status and Expected<T> are part of the public API (include/systolic/status.h).
#pragma once
#include "systolic/status.h"
