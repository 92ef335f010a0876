/** The engine's version, recorded in every run_start record. */
export const ENGINE_VERSION = '0.1.0';
