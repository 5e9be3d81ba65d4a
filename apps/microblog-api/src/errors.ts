import { createError } from '@platform/http-kit';

export const PostNotFoundError = createError<[number | string]>(
  'MICROBLOG_POST_NOT_FOUND',
  'No post with id %s',
  404,
);
