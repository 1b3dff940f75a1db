// An event iteration that cannot settle: in mode g the equations give s = -1, so g becomes
// false; in mode not g they give s = 1, so g becomes true again. Expected: rejected at compile
// time (E-FIXPOINT), the two modes, the guard g and equations named.
class Chatter
  Real x(start = 0.0, fixed = true);
  Real s;
  Boolean g(start = true);
equation
  der(x) = s;
  g = s >= 0;
  if g then
    s = -1;
  else
    s = 1;
  end if;
end Chatter;
