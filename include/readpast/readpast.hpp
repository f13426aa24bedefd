// readpast/readpast.hpp — includes the whole public API.
#pragma once

#include "readpast/allocator.hpp"
#include "readpast/error.hpp"
#include "readpast/job.hpp"
#include "readpast/options.hpp"
#include "readpast/queue.hpp"
#include "readpast/time.hpp"
#include "readpast/version.hpp"
#include "readpast/worker.hpp"
