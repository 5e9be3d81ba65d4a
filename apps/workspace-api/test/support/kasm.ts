/** What tests compare the Kasm wire format with. */

/** A well-formed id that names nothing. */
export const UNKNOWN = '0123456789abcdef0123456789abcdef';
/** Ids on the wire: 32 lowercase hex characters. */
export const HEX32 = /^[0-9a-f]{32}$/;
/** Datetimes on the wire: UTC `YYYY-MM-DD HH:MM:SS.ffffff`. */
export const KASM_DATE = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$/;
/** Exactly the keys of a Kasm user, sorted. */
export const USER_KEYS = [
  'created',
  'disabled',
  'first_name',
  'groups',
  'last_name',
  'last_session',
  'locked',
  'notes',
  'organization',
  'phone',
  'realm',
  'user_id',
  'username',
];

/** Exactly the keys of a user as get_user and get_users answer it (Kasm's longer shape), sorted. */
export const LISTED_USER_KEYS = [...USER_KEYS, 'kasms'].sort();

/** A 32-hex id as a dashed UUID (what clients may send, and the database's form). */
export const dashed = (hex: string) =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
