package bcifix;

public class Square extends Base implements Shape {
    @Override
    public int sides() {
        return 4;
    }

    @Override
    int kind() {
        return 1;
    }
}

abstract class Base {
    abstract int kind();

    native void notCalled();
}
