class Comment
  Real x;
equation
  x = 1; /* this comment
  never ends;
end Comment;
