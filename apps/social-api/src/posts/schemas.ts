import { Type, type Static } from '@sinclair/typebox';
import { IsoTimestamp } from '@platform/schema';
import { User } from '../users/schemas';

export const Post = Type.Object(
  {
    id: Type.Integer({ minimum: 1 }),
    url: Type.String({ description: '`/api/posts/<id>`', examples: ['/api/posts/1'] }),
    text: Type.String({ maxLength: 280 }),
    timestamp: IsoTimestamp({
      description: 'Creation time (editing keeps it); usable exactly as an `after` cursor',
    }),
    author: User,
  },
  { $id: 'Post', description: 'A post with its author' },
);
export type Post = Static<typeof Post>;

const Text = Type.String({ minLength: 1, maxLength: 280, description: '1..280 characters' });

export const NewPost = Type.Object({ text: Text }, { additionalProperties: false });
export const PostChanges = Type.Object(
  { text: Type.Optional(Text) },
  { additionalProperties: false, description: 'Absent `text` leaves it unchanged' },
);
export const PostIdParams = Type.Object({ id: Type.String({ description: 'A post id' }) });
