#ifndef TIPIPE_CCRYPTO_SHIM_H
#define TIPIPE_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <zlib.h>
#endif
