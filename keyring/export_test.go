package keyring

// KeyIDOf is keyID for the tests: it finds two keys with the same id.
var KeyIDOf = keyID
