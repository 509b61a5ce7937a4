# Publisher: may sign manifests with the transit key and read its public half (to name
# each signature's key by its fingerprint); cannot export, rotate or configure the key.
# Reads its own credentials.
path "transit/sign/manifests" {
  capabilities = ["update"]
}

path "transit/keys/manifests" {
  capabilities = ["read"]
}

path "secret/data/fiolake/publisher" {
  capabilities = ["read"]
}
