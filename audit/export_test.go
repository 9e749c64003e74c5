package audit

// SecretField is secretField, for the redaction's fuzz test.
var SecretField = secretField
