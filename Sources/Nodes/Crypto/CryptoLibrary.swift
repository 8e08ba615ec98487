internal import CCrypto

/// libcrypto's one-time initialization, done before this module's first OpenSSL call (and before
/// libcurl's, which would otherwise initialize OpenSSL its own way).
///
/// OpenSSL registers an `atexit` handler that frees its global locks and tables. A process that exits
/// while another thread is still hashing or decrypting (a worker verifying an object when a command
/// returns) then crashes in that thread on a freed lock (openssl/openssl#6214). With
/// `OPENSSL_INIT_NO_ATEXIT` the process's end frees that memory instead, as OpenSSL's maintainers
/// advise for such programs.
enum CryptoLibrary {
  /// Evaluated once, thread-safely, by every entry point into libcrypto.
  static let initialized: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
}
