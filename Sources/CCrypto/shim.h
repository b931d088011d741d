// The parts of OpenSSL's libcrypto that swift-apns uses, plus wrappers for its macros,
// which Swift cannot import. Nothing else happens here.
#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/objects.h>

static inline long ccrypto_bio_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

/// A passphrase callback for PEM_read_bio_PrivateKey: `userdata` is a NUL-terminated passphrase
/// (or NULL, in which case an encrypted key fails to load instead of prompting on the terminal).
static inline int ccrypto_passphrase_callback(char *buffer, int size, int rwflag, void *userdata) {
    (void)rwflag;
    if (userdata == NULL) { return -1; }
    const char *pass = (const char *)userdata;
    int length = 0;
    while (pass[length] != '\0') { length++; }
    if (length > size) { return -1; }
    for (int i = 0; i < length; i++) { buffer[i] = pass[i]; }
    return length;
}

static inline EVP_PKEY *ccrypto_read_private_key(BIO *bio, const char *passphrase) {
    return PEM_read_bio_PrivateKey(bio, NULL, ccrypto_passphrase_callback, (void *)passphrase);
}

static inline STACK_OF(X509) *ccrypto_sk_x509_new(void) { return sk_X509_new_null(); }
static inline int ccrypto_sk_x509_num(STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *ccrypto_sk_x509_value(STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
static inline void ccrypto_sk_x509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }

static inline unsigned long ccrypto_xn_flag_rfc2253(void) { return XN_FLAG_RFC2253; }

#endif
