# Publisher: may sign manifests with the transit key, nothing else on it
# (cannot read, export, rotate or configure the key), and read its own credentials.
path "transit/sign/manifests" {
  capabilities = ["update"]
}

path "secret/data/fiolake/publisher" {
  capabilities = ["read"]
}
