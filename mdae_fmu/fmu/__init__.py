"""FMU packaging: `export.export(model, path, fmi_type)` (the entry point used by
`mdae_fmu.api.export_fmu`), `model_description` (XML text), `build` (gcc), `package` (zip)."""
