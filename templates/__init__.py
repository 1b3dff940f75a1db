"""C and XML templates rendered by mdae_fmu.codegen and mdae_fmu.fmu (package data)."""
