# Runner: may read the transit key's public half to verify manifests offline; cannot
# sign (so a compromised runner cannot forge jobs). Reads only its own credentials.
path "transit/keys/manifests" {
  capabilities = ["read"]
}

path "secret/data/fiolake/runner" {
  capabilities = ["read"]
}
