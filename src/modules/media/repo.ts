// The media module keeps nothing of its own: a call's turns, usage, end and recording go through the calls module.
export const OWNED_TABLES = [] as const;
