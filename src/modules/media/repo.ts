// The media module keeps nothing of its own: a call's turns, usage and end go through the calls module.
export const OWNED_TABLES = [] as const;
