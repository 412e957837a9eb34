"""Local mode: the real stack deployed into moto's server, with mappings and alarms run in-process."""
