#ifndef TIPIPE_CARCHIVE_SHIM_H
#define TIPIPE_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>

// Constants Swift cannot import (macros of expressions).
static const unsigned int carchive_regular_file = AE_IFREG;
static const int carchive_ok = ARCHIVE_OK;
static const int carchive_eof = ARCHIVE_EOF;
static const int carchive_warn = ARCHIVE_WARN;
#endif
